/**
 * Guardrails on the answer, in the chat form every translated client API renders from (chat, Responses,
 * Messages, Gemini): a whole completion is checked at once; a stream is checked lane by lane (each choice's
 * content, each tool call's arguments or custom input) as it flows, through the guardrails in the alias's order
 * as a completion is (output_lane.ts): built-in recognizers on a sliding window (holdback.ts), so the client
 * sees text only after a check saw it with `window` characters after it, a longer value (a private key, a JWT)
 * held until it ends, up to {@linkcode OUTPUT_CAP}; an external service asked per segment of `window`
 * characters of what the guardrails before it released (one call each, awaited before the segment goes on).
 * Masked values of the request come back last (mask.ts), after the checks read what the model said. A denial
 * ends the stream with the API's error event (the reader fails with the 400), never a clean end. A stream's
 * outcomes are one per guardrail, as a completion's (stream_outcomes.ts).
 *
 * @module
 */
import type { ChatCompletion, ChatCompletionChunk, JsonObject } from "../openai/types.ts";
import { isObject } from "../openai/types.ts";
import { pushSaidTexts, SAID_FIELDS, type SaidField } from "../openai/said_fields.ts";
import type { TextSlot } from "../policy/text_slots.ts";
import { createUnmasker } from "./mask.ts";
import type { RequestGuardrails } from "./request.ts";
import { guardrailDenied, type GuardrailRequest, runGuardrails } from "./run.ts";
import { type Lane, laneOf, type LaneSetup } from "./output_lane.ts";
import { streamOutcomes } from "./stream_outcomes.ts";
import type { Peeked } from "../answer/stream_body.ts";
import { callTexts, jsonEscaped, putBackCallText } from "./call_texts.ts";
import { annotationTexts } from "./annotation_texts.ts";
import { badGateway } from "../errors.ts";

/** Characters a stream's text is held back for checks (built-in: the sliding window; external: a segment). */
export const OUTPUT_WINDOW = 256;

/**
 * Characters a built-in check holds a long value for (a private key, a JWT: holdback.ts) until it ends, so it is
 * checked whole; a longer one is refused or masked through its end without being seen whole. 16 KiB holds an
 * RSA-8192 PEM key (about 6.5 KiB) and a JWT that fits an 8 KiB HTTP header; it bounds a lane's held text
 * (UTF-16 code units).
 */
export const OUTPUT_CAP = 16 * 1024;

/**
 * Lanes a stream may have open at once (each choice's said fields and tool calls, until its choice
 * finishes). Each holds up to a window of text, a hold-back and an unmasker (about 1.5 KB at rest); without
 * a bound, an upstream sending deltas for ever-new choice (or tool call) indexes grew them with the stream
 * until `timeouts.total`. 1,024 is well past what the largest real answer opens (OpenAI's `n` is at most 128,
 * with three said fields each and a few tool calls): an upstream past it is malformed, and the stream ends
 * with the API's error event, as for other upstream faults.
 */
export const OUTPUT_LANES_MAX = 1_024;

/**
 * The fields that carry what the model says in text (`SAID_FIELDS`, the one list), each with its stream lane's
 * letter, which tells a stream's lanes apart. Each reaches the client in every client API, so each is checked.
 */
const LANE_LETTERS: Record<SaidField, string> = { content: "c", reasoning_content: "r", refusal: "f" };
const SAID: readonly { field: SaidField; lane: string }[] = SAID_FIELDS.map((field) => ({
  field,
  lane: LANE_LETTERS[field],
}));

/** The texts of a stream chunk the checks read: what the model said and its tool calls' texts. */
export function chunkTexts(chunk: ChatCompletionChunk): string[] {
  const texts: string[] = [];
  for (const choice of chunk.choices) {
    const delta = isObject(choice) && isObject(choice.delta) ? choice.delta : undefined;
    if (!delta) continue;
    pushSaidTexts(delta, texts);
    for (const call of callTexts(delta)) texts.push(call.text);
  }
  return texts;
}

/**
 * The texts of a completion's choices as slots: content, reasoning, refusal, tool calls' texts (those that
 * are JSON, arguments, also added to `args`, when given) and citations' titles and URLs (annotation_texts.ts). Their `param` is empty: an answer's text is no
 * parameter of the request, so its refusal names none (run.ts).
 */
function completionSlots(completion: ChatCompletion, args?: Set<TextSlot>): TextSlot[] {
  const slots: TextSlot[] = [];
  for (const choice of completion.choices) {
    const message = isObject(choice) ? choice.message : undefined;
    if (!isObject(message)) continue;
    for (const { field } of SAID) {
      if (typeof message[field] !== "string") continue;
      slots.push({ param: "", text: message[field] as string, write: (t) => message[field] = t });
    }
    for (const call of callTexts(message)) {
      const slot: TextSlot = { param: "", text: call.text, write: call.write };
      slots.push(slot);
      if (call.json) args?.add(slot);
    }
    for (const a of annotationTexts(message)) slots.push({ param: "", text: a.text, write: a.write });
  }
  return slots;
}

/** Checks a whole completion in place (output guardrails, then the request's masked values given back). */
export async function guardCompletion(
  completion: ChatCompletion,
  state: RequestGuardrails,
  req: Omit<GuardrailRequest, "phase" | "masker">,
): Promise<void> {
  const args = new Set<TextSlot>();
  const slots = completionSlots(completion, args);
  // Only the request's own placeholders come back: taken before the output guardrails mask through the same
  // masker, whose values the client must not get back.
  const requestMasks = state.reverse ? new Map(state.masker.mapping()) : undefined;
  if (state.output.length > 0) {
    await runGuardrails(
      state.output,
      slots,
      { ...req, phase: "output", masker: state.masker },
      state.outcomes,
    );
  }
  if (requestMasks === undefined) return;
  const unmasker = createUnmasker(requestMasks);
  const argsUnmasker = createUnmasker(jsonEscaped(requestMasks));
  for (const slot of slots) {
    const text = (args.has(slot) ? argsUnmasker : unmasker).unmaskText(slot.text);
    if (text !== slot.text) slot.write(text);
  }
}

/**
 * `stream` with the request's output guardrails and unmasking applied, lane by lane. Held text is given out in
 * the chunk that finishes its choice (or a chunk of its own at the end); a denial fails the reader with the
 * 400 (its outcome is in `state.outcomes` for the record). A denial in the first chunk rejects before the
 * stream starts, so the client gets the 400 itself.
 */
export async function guardChunks(
  stream: Peeked<ChatCompletionChunk>,
  state: RequestGuardrails,
  req: Omit<GuardrailRequest, "phase" | "masker">,
): Promise<Peeked<ChatCompletionChunk>> {
  const full: GuardrailRequest = { ...req, phase: "output", masker: state.masker };
  // The request's placeholders as they stand before any output guardrail masks through the same masker: a
  // lane opened later must not give back what an earlier lane's output check masked.
  const requestMasks = state.reverse ? new Map(state.masker.mapping()) : undefined;
  const argsMasks = requestMasks && jsonEscaped(requestMasks);
  const outcomes = streamOutcomes(state.output, state.outcomes);
  const setup: LaneSetup = {
    guardrails: state.output,
    req: full,
    outcomes,
    onDeny: (g, types): never => {
      outcomes.note({ name: g.name, phase: "output", action: "deny", types: [...types] });
      throw guardrailDenied(g, "output", `it contains ${types.join(", ") || "what it refuses"}`, null);
    },
    window: OUTPUT_WINDOW,
    cap: OUTPUT_CAP,
  };
  /** The open lanes by choice index, then by the lane's letter(s) (`SAID`'s, or call_texts.ts's). */
  const lanes = new Map<number, Map<string, Lane>>();
  let open = 0;
  const lane = (index: number, key: string, json = false) => {
    let choice = lanes.get(index);
    let l = choice?.get(key);
    if (l) return l;
    if (open >= OUTPUT_LANES_MAX) {
      throw badGateway(
        `The provider's stream opened more than ${OUTPUT_LANES_MAX} texts (choices and tool calls) at once.`,
      );
    }
    if (choice === undefined) lanes.set(index, choice = new Map());
    // JSON text (a tool call's arguments) gets the values back escaped; what the model said, and a custom
    // call's free-text input, raw.
    choice.set(key, l = laneOf(setup, json ? argsMasks : requestMasks));
    open++;
    return l;
  };
  let last: ChatCompletionChunk = stream.first;

  async function rewrite(chunk: ChatCompletionChunk): Promise<ChatCompletionChunk> {
    last = chunk;
    for (const choice of chunk.choices) {
      const index = typeof choice.index === "number" ? choice.index : 0;
      const delta = isObject(choice.delta) ? choice.delta : undefined;
      for (const { field, lane: letter } of SAID) {
        if (delta && typeof delta[field] === "string") {
          delta[field] = await lane(index, letter).push(delta[field] as string);
        }
      }
      for (const call of delta ? callTexts(delta) : []) {
        call.write(await lane(index, call.lane, call.json).push(call.text));
      }
      // A citation arrives whole in one delta: each of its texts is a lane of its own, checked and ended at once.
      for (const a of delta ? annotationTexts(delta) : []) {
        const once = laneOf(setup, requestMasks);
        a.write(await once.push(a.text) + await once.end());
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        await flushChoice(index, choice as JsonObject);
      }
    }
    return chunk;
  }

  /**
   * Ends every lane of choice `index`, adding what they held to `choice`'s delta. Only its own lanes: an
   * upstream finishing n choices one by one made n walks of every open lane when they were one map.
   */
  async function flushChoice(index: number, choice: JsonObject): Promise<void> {
    const ending = lanes.get(index);
    if (ending === undefined) return;
    lanes.delete(index);
    open -= ending.size;
    for (const [key, l] of ending) {
      const rest = await l.end();
      if (rest === "") continue;
      const delta = isObject(choice.delta) ? choice.delta : (choice.delta = {}) as JsonObject;
      const said = SAID.find((s) => s.lane === key);
      if (said !== undefined) {
        const held = delta[said.field];
        delta[said.field] = (typeof held === "string" ? held : "") + rest;
        continue;
      }
      putBackCallText(delta, key, rest);
    }
  }

  /** What is still held once the upstream ended without finishing a choice: one chunk of its own. */
  async function leftover(): Promise<ChatCompletionChunk | undefined> {
    if (lanes.size === 0) return undefined;
    const choices: JsonObject[] = [];
    for (const index of [...lanes.keys()]) {
      const choice: JsonObject = { index, delta: {}, finish_reason: null };
      await flushChoice(index, choice);
      choices.push(choice);
    }
    return {
      id: last.id,
      object: "chat.completion.chunk",
      created: last.created,
      model: last.model,
      choices,
    };
  }

  let ended = false;
  const first = await rewrite(stream.first);
  const rest = new ReadableStream<ChatCompletionChunk>({
    async pull(controller) {
      try {
        if (ended) return controller.close();
        const next = await stream.rest.read();
        if (next.done) {
          ended = true;
          const tail = await leftover();
          if (tail) controller.enqueue(tail);
          else controller.close();
          return;
        }
        controller.enqueue(await rewrite(next.value));
      } catch (err) {
        await stream.rest.cancel(err).catch(() => {});
        controller.error(err);
      }
    },
    cancel: (reason) => stream.rest.cancel(reason),
  }, { highWaterMark: 0 }).getReader();
  return { first, rest };
}
