/**
 * Guardrails on the request path: the input phase, run right after the policy admitted a request (where
 * content rules run), and what the answer's phase needs from it. Attached to a request only when its alias or
 * token has guardrails, so a gateway without any pays nothing.
 *
 * @module
 */
import type { Endpoint } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import type { JsonObject, Usage } from "../openai/types.ts";
import type { StreamTexts } from "../usage/stream_texts.ts";
import { isTokenInput, type TextSlot, textSlots } from "../policy/text_slots.ts";
import { tokenInputUnreadable } from "../policy/denied.ts";
import { createMasker, type Masker } from "./mask.ts";
import { type GuardrailOutcome, guardrailsFor, type ResolvedGuardrail } from "./resolved.ts";
import { guardrailRule, runGuardrails } from "./run.ts";

/** A request's guardrail state (`RequestContext.guardrails`). */
export interface RequestGuardrails {
  readonly masker: Masker;
  /** Every outcome so far, input then output. */
  readonly outcomes: GuardrailOutcome[];
  /** The answer's guardrails (the alias's and the token's with an `output` phase). */
  readonly output: readonly ResolvedGuardrail[];
  /** Whether the answer gets masked values back (an input `mask` guardrail with `reverse`). */
  reverse: boolean;
  /**
   * Serve over the chat form, never pass the client's body through natively: the request's text was changed
   * (the native body would still hold it), or the answer is checked (checks read the chat form's chunks).
   */
  chatOnly: boolean;
  /**
   * What the upstream sent of a streamed answer the output phase reads, before any of it was held back or
   * masked: its texts and its usage, when it reported some. The upstream spent it whether or not the client got
   * it, so a stream the checks withheld (or that ended while text was held) is counted from this.
   */
  received?: { texts: StreamTexts; usage?: Usage };
}

/** The policy outcome and rules the outcomes add to a request's record. */
export function outcomeRules(outcomes: readonly GuardrailOutcome[]): { modified: boolean; rules: string[] } {
  const rules: string[] = [];
  let modified = false;
  for (const o of outcomes) {
    if (o.action === "pass") continue;
    rules.push(guardrailRule(o.name));
    if (o.action === "mask" || o.action === "replace") modified = true;
  }
  return { modified, rules };
}

/**
 * Runs the input guardrails of `model` and `token` on `body` (in place), keeping the request's guardrail state
 * with `keep` first (so a refusal's outcome is recorded too). Nothing when none apply. Throws a denial (400)
 * or a `fail_closed` failure (503). `carried`: texts the request carries to its targets beside `body` (a Gemini
 * embed request's titles), checked after the body's and written back in place as they are.
 */
export async function checkInput(
  endpoint: Endpoint,
  model: ResolvedModel | undefined,
  token: ResolvedToken,
  body: JsonObject | undefined,
  signal: AbortSignal,
  keep: (state: RequestGuardrails) => void,
  carried: readonly TextSlot[] = [],
): Promise<RequestGuardrails | undefined> {
  const input = guardrailsFor("input", model?.guardrails, token.guardrails);
  // Embeddings and moderations answer with no text a model said: nothing to check on the way out.
  const output = endpoint === "embeddings" || endpoint === "moderations"
    ? []
    : guardrailsFor("output", model?.guardrails, token.guardrails);
  if (input.length === 0 && output.length === 0) return undefined;
  // Token ids are no text a check could read: refused, not passed unchecked (text_slots.ts says why).
  if (input.length > 0 && isTokenInput(endpoint, body)) {
    throw tokenInputUnreadable(guardrailRule(input[0].name), `guardrail ${input[0].name}`);
  }
  const slots = input.length > 0 ? [...textSlots(endpoint, body, { toolArguments: true }), ...carried] : [];
  const state: RequestGuardrails = {
    // Told every text up front, so no placeholder it issues is one the client already wrote.
    masker: createMasker(slots.map((s) => s.text)),
    outcomes: [],
    output,
    reverse: false,
    chatOnly: output.length > 0,
  };
  keep(state);
  if (input.length > 0) {
    const req = {
      phase: "input" as const,
      alias: model?.alias ?? "",
      token: token.name,
      signal,
      masker: state.masker,
    };
    await runGuardrails(input, slots, req, state.outcomes);
    for (const o of state.outcomes) {
      if (o.action === "mask" || o.action === "replace") state.chatOnly = true;
      if (o.action === "mask" && input.find((g) => g.name === o.name)?.reverse) state.reverse = true;
    }
  }
  return state;
}
