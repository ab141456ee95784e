/**
 * The built-in output guardrail the output tests configure (the stream lanes, the window, the chunk guard):
 * one place for its settings, so a field added to ResolvedGuardrail is given once.
 *
 * @module
 */
import { NO_SECRETS } from "../secrets/scrubber.ts";
import type { GuardrailAction, ResolvedGuardrail } from "./resolved.ts";

/** A built-in output guardrail `name` that acts on `pii` (every type when null). */
export function outputBuiltin(
  name: string,
  action: GuardrailAction,
  pii: string[] | null,
): ResolvedGuardrail {
  return {
    name,
    phases: new Set(["output"]),
    action,
    reverse: false,
    message: null,
    pii,
    service: null,
    timeoutMs: 1_000,
    onFailure: "fail_open",
    scrubber: NO_SECRETS,
  };
}
