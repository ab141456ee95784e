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
import type { NativeText } from "../policy/content_rules.ts";
import { createMasker, type Masker } from "./mask.ts";
import { nativeSlots } from "./native_slots.ts";
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
   * What the input guardrails made of the texts a native target reads (native_slots.ts): each text of the
   * client's body as the content rules left it → as the guardrails left it, those they changed only. The native
   * body's builders apply it after the content rules' redactions (`redactedBody`), so a native target, or a
   * vendor's token count, gets a masked value masked. Absent when nothing changed.
   */
  nativeRewrites?: ReadonlyMap<string, string>;
  /**
   * Serve over the chat form, never pass the client's body through natively: a text of the request's chat form
   * was changed (the native body is not known to carry every such change: native_slots.ts), the answer is
   * checked (checks read the chat form's chunks), or gets masked values back. A request whose guardrails changed
   * only texts a native target alone reads is passed through, with `nativeRewrites`.
   */
  chatOnly: boolean;
  /**
   * What the upstream sent of a streamed answer the output phase reads, before any of it was held back or
   * masked: its texts and its usage, when it reported some. The upstream spent it whether or not the client got
   * it, so a stream the checks withheld (or that ended while text was held) is counted from this.
   */
  received?: { texts: StreamTexts; usage?: Usage };
}

/** Whether a request of `token` to `model` has input guardrails (the alias's or the token's). */
export function hasInputGuardrails(
  model: Pick<ResolvedModel, "guardrails"> | undefined,
  token: Pick<ResolvedToken, "guardrails">,
): boolean {
  const input = (list: readonly ResolvedGuardrail[] | undefined) => list?.some((g) => g.phases.has("input"));
  return input(model?.guardrails) === true || input(token.guardrails) === true;
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
 * embed request's titles), checked after the body's and written back in place as they are. `native`: the texts
 * of the client's body a native target of the alias reads (`PolicyRequest.nativeTexts`), checked after those
 * (the ones no chat text holds), what the guardrails made of them kept as `nativeRewrites`.
 */
export async function checkInput(
  endpoint: Endpoint,
  model: ResolvedModel | undefined,
  token: ResolvedToken,
  body: JsonObject | undefined,
  signal: AbortSignal,
  keep: (state: RequestGuardrails) => void,
  carried: readonly TextSlot[] = [],
  native: readonly NativeText[] = [],
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
  const chat = input.length > 0 ? [...textSlots(endpoint, body, { toolArguments: true }), ...carried] : [];
  // What only a native target reads has no chat slot: judged beside them, rewritten where the native body is built.
  const natives = input.length > 0 && native.length > 0
    ? nativeSlots(native, model?.contentRules ?? [], chat)
    : undefined;
  const slots = natives === undefined ? chat : [...chat, ...natives.slots];
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
    const changes = natives?.changes();
    state.nativeRewrites = changes?.rewrites;
    for (const o of state.outcomes) {
      // What a native target alone reads is rewritten where its body is built; any other change needs the chat form.
      const changed = o.action === "mask" || o.action === "replace";
      if (changed && (changes?.rewrites === undefined || changes.chatChanged)) state.chatOnly = true;
      if (o.action === "mask" && input.find((g) => g.name === o.name)?.reverse) {
        state.reverse = true;
        state.chatOnly = true;
      }
    }
  }
  return state;
}
