/**
 * The contract between the request path and the policy engine.
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { JsonObject } from "../openai/types.ts";
import type { PolicyOutcome } from "../usage/record.ts";
import type { StreamAllowance } from "./stream_allowance.ts";
import type { NativeText } from "./content_rules.ts";
import type { TextSlot } from "./text_slots.ts";

/** What a request asks for, as the policy sees it. */
export interface PolicyRequest {
  identity: ResolvedToken;
  endpoint: Endpoint;
  /** The alias, once resolved (absent for `/v1/models`). */
  model?: ResolvedModel;
  /**
   * The request body; content rules may redact it and the max_tokens ceiling may lower it, in place (the
   * server passes a body it owns).
   */
  body?: JsonObject;
  /**
   * The texts of the client's body as a native target of the alias would read them, when it has one: content
   * rules judge them beside the chat form's (some have no chat form), never writing them.
   */
  nativeTexts?: readonly NativeText[];
  /**
   * Texts the request carries to its targets beside its body, which no field of the body holds (a Gemini embed
   * request's `title`s, sent to a Gemini target only): the content rules judge and redact them in place, with the
   * body's own texts and exactly as those.
   */
  carriedTexts?: readonly TextSlot[];
  /**
   * Tokens this request is expected to use (prompt estimate + requested maximum), charged up front for TPM.
   * As a function it is called with the body after content rules and the max_tokens ceiling have changed
   * it, so that a lowered `max_tokens` lowers the charge too.
   */
  estimatedTokens: number | ((body: JsonObject | undefined) => number);
  /** The request's headers: an `end_user_limits.header` names the end user there. */
  headers?: Headers;
}

/**
 * An admitted request. `settle` must be called when the request is over (also on failure, with what was
 * actually used, possibly 0; for streams when the stream ends): it releases concurrency, corrects the TPM
 * charge to the real usage, and adds to budgets.
 */
export interface Admission {
  outcome: Exclude<PolicyOutcome, "deny">;
  /** The rule(s) that modified the request, joined with ",", or null. */
  rule: string | null;
  /** OpenAI's `x-ratelimit-*` headers for the limits that apply (most restrictive first). */
  headers: Record<string, string>;
  /**
   * Idempotent: only the first call counts. The promise resolves when the counters are updated and never
   * rejects (store failures go to the engine's `onError`), so callers may ignore it.
   */
  settle(actual: { tokens: number; cost: number }): Promise<void>;
  /** For a token whose budget has `stop_streams`: what its stream may use before it is ended; else null. */
  stream?: StreamAllowance | null;
}
