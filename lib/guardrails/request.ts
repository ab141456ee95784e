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
import { withholdUnread } from "./unread_output.ts";

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
   * was changed in a way the native body cannot carry exactly (native_slots.ts: a tool call's arguments, a text
   * the chat form joined from several), the answer is checked (checks read the chat form's chunks), or gets
   * masked values back (reversed in the chat form's chunks). A request whose guardrails changed texts the native
   * body holds is passed through, with `nativeRewrites`.
   */
  chatOnly: boolean;
  /**
   * An input guardrail changed a text the native body cannot carry (native_slots.ts), so the client's body,
   * even with `nativeRewrites`, still holds that text as the client sent it: it goes to no upstream, neither
   * to a native target (`chatOnly` is set too) nor to a vendor's token count, which counts the chat form
   * instead (lib/answer/token_count.ts). Unlike `chatOnly` it says nothing of the answer (checked, or given
   * masked values back), which a count does not have; a compaction has one, and follows `chatOnly`
   * (lib/api/responses/compact.ts).
   */
  unplaced: boolean;
  /**
   * When `chatOnly` and the alias has a native target: the params of the client's texts that the chat form holds
   * nowhere (a Responses reasoning item no assistant turn follows, a plain-text file, a Messages document of
   * content blocks, a Gemini thought), which a native target served over it goes without: named in
   * `x-gateway-dropped` (`ChatForm.chatLoses`).
   */
  chatLoses?: readonly string[];
  /**
   * The chat form's params the output checks kept from the upstream, since they ask for what no check reads
   * (unread_output.ts: `logprobs`, `top_logprobs`): named in `x-gateway-dropped` and the usage record's
   * `dropped` with whatever else the answering target went without (`noteDropped`). Absent when none.
   */
  withheld?: readonly string[];
  /**
   * What the upstream sent of a streamed answer the output phase reads, before any of it was held back or
   * masked: its texts and its usage, when it reported some. The upstream spent it whether or not the client got
   * it, so a stream the checks withheld (or that ended while text was held) is counted from this.
   */
  received?: { texts: StreamTexts; usage?: Usage };
}

/**
 * Whether a request of `token` to `model` has guardrails (the alias's or the token's): an input one, which reads
 * the texts a native target reads, or an output one, which makes the request go over the chat form, whose losses
 * those texts name (`RequestGuardrails.chatLoses`).
 */
export function hasGuardrails(
  model: Pick<ResolvedModel, "guardrails"> | undefined,
  token: Pick<ResolvedToken, "guardrails">,
): boolean {
  return (model?.guardrails?.length ?? 0) > 0 || (token.guardrails?.length ?? 0) > 0;
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
 * (the ones no chat text holds), what the guardrails made of them kept as `nativeRewrites`. Under output
 * guardrails, `body` (the chat form, for a generation) first loses what the answer would say where no output
 * check reads it (unread_output.ts: log probabilities, kept as `withheld`), or is refused for asking for speech.
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
  // What the answer would say where no output check reads it is not asked for (or, speech, refused).
  const withheld = output.length > 0 && body !== undefined ? withholdUnread(body, output) : [];
  // A native target's texts are read for the input checks, or, under output checks alone, to name what the chat
  // form they make the request go over leaves out.
  const chat = input.length > 0 || native.length > 0
    ? [...textSlots(endpoint, body, { toolArguments: true }), ...carried]
    : [];
  // What only a native target reads has no chat slot: judged beside them, rewritten where the native body is built.
  const natives = native.length > 0
    ? nativeSlots(native, model?.contentRules ?? [], chat, endpoint)
    : undefined;
  const slots = input.length === 0 ? [] : natives === undefined ? chat : [...chat, ...natives.slots];
  const state: RequestGuardrails = {
    // Told every text up front, so no placeholder it issues is one the client already wrote.
    masker: createMasker(slots.map((s) => s.text)),
    outcomes: [],
    output,
    reverse: false,
    chatOnly: output.length > 0,
    unplaced: false,
    ...(withheld.length > 0 ? { withheld } : {}),
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
      // A change the native body holds is made where it is built; one it cannot carry needs the chat form.
      const changed = o.action === "mask" || o.action === "replace";
      if (changed && (changes?.rewrites === undefined || changes.unplaced)) {
        state.unplaced = true;
        state.chatOnly = true;
      }
      if (o.action === "mask" && input.find((g) => g.name === o.name)?.reverse) {
        state.reverse = true;
        state.chatOnly = true;
      }
    }
  }
  if (state.chatOnly && natives !== undefined) state.chatLoses = natives.lost();
  return state;
}
