/**
 * `guardrails:`: checks defined once, by name, and attached to aliases (`models.*.guardrails`) and tokens
 * (`tokens.*.guardrails`). Each runs on the request (`phase: input`), the answer (`output`) or both, and does
 * one thing with what it finds (`action`): refuse it, mask it, or only record it. A built-in one (`type: pii`)
 * uses the gateway's own recognizers; the others call a service (lib/guardrails/external/), bounded by a
 * timeout, and `on_failure` says what a failed call means. docs/guardrails.md explains each.
 *
 * @module
 */
import { z } from "zod";
import { duration } from "./units_schema.ts";
import { headerCredential } from "./header_map.ts";
import { PII_TYPES } from "../guardrails/pii/index.ts";
import {
  azureContentSafetyGuardrailSchema,
  bedrockGuardrailSchema,
  openaiModerationGuardrailSchema,
  webhookGuardrailSchema,
} from "../guardrails/external/schema.ts";

/** Guardrail names are referenced from aliases and tokens and appear in rule names (`guardrail:<name>`). */
export const GUARDRAIL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

const common = {
  /** Where it looks: the request's texts, the answer's, or both. */
  phase: z.enum(["input", "output", "both"]).default("input"),
  /** Shown to the client when it refuses, instead of the generic message. */
  message: z.string().min(1).max(500).optional(),
};

const external = {
  ...common,
  /** `deny` refuses what the service catches; `flag` lets it through and records the categories. */
  action: z.enum(["deny", "flag"]).default("deny"),
  /** Longest a call may take; a slower one is a failure. */
  timeout: duration.refine((ms) => ms > 0 && ms <= 60_000, "must be above 0 and at most 60s").default(2_000),
  /** A failed or slow call: let the request through (recorded as an error) or refuse it (503). */
  on_failure: z.enum(["fail_open", "fail_closed"]).default("fail_closed"),
};

/** The built-in PII recognizers (lib/guardrails/pii/). */
const piiGuardrailSchema = z.strictObject({
  type: z.literal("pii"),
  ...common,
  /** The types it recognizes; all of them when absent. */
  entities: z.array(z.enum(PII_TYPES as unknown as [string, ...string[]])).min(1).optional(),
  /** `deny` refuses; `mask` replaces each value with a typed placeholder (`<EMAIL_1>`); `flag` only records. */
  action: z.enum(["deny", "mask", "flag"]).default("deny"),
  /**
   * With `mask` on the request: give the values back in the answer, so the model never sees them and the
   * client still reads them (also across a stream's chunks).
   */
  reverse: z.boolean().default(false),
});

export const guardrailSchema = z.discriminatedUnion("type", [
  piiGuardrailSchema,
  webhookGuardrailSchema.extend(external),
  openaiModerationGuardrailSchema.extend({
    ...external,
    /** The key; or name an `openai` provider of `providers:` to use its key and base URL. */
    api_key: headerCredential.min(1).optional(),
    provider: z.string().min(1).optional(),
  }),
  bedrockGuardrailSchema.extend(external),
  azureContentSafetyGuardrailSchema.extend(external),
]);

/** The `guardrails:` section: by name. */
export const guardrailsSchema = z.record(
  z.string().regex(GUARDRAIL_NAME_PATTERN, "use letters, digits and . _ - (64 at most)"),
  guardrailSchema,
);

/** The names a model or token attaches, in the order they run. */
export const guardrailRefs = z.array(z.string().regex(GUARDRAIL_NAME_PATTERN, "a guardrail name")).max(16);

export type GuardrailConfig = z.output<typeof guardrailSchema>;
