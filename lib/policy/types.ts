/**
 * The contract between the request path and the policy engine.
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { JsonObject } from "../providers/types.ts";
import type { PolicyOutcome } from "../usage/record.ts";

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
  /** Tokens this request is expected to use (prompt estimate + requested maximum), charged up front for TPM. */
  estimatedTokens: number;
}

/**
 * An admitted request. `settle` must be called exactly once when the request is over (also on failure, with
 * what was actually used, possibly 0): it releases concurrency, corrects the TPM charge to the real usage, and
 * adds to budgets.
 */
export interface Admission {
  outcome: Exclude<PolicyOutcome, "deny">;
  /** The rule(s) that modified the request, joined with ",", or null. */
  rule: string | null;
  /** OpenAI's `x-ratelimit-*` headers for the limits that apply (most restrictive first). */
  headers: Record<string, string>;
  settle(actual: { tokens: number; cost: number }): void;
}
