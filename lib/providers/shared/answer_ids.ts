/**
 * The identifiers of an upstream's success answer, scrubbed of the config's secrets before any client API sees
 * them. An upstream that echoes the credential it was sent in its answer's `id`, `system_fingerprint` or
 * `model` (a misconfigured proxy, a fake, a hostile server) would otherwise hand the gateway's key to every
 * client, whole or in a stream's every chunk; the same `id` is already scrubbed out of spans
 * (telemetry/request_trace.ts). Run once per answer in the provider skeleton (skeleton.ts), so the translated
 * paths (a chat completion, then Responses, Messages or Gemini built from it) and the native passthroughs
 * (Responses, Messages, Gemini bodies and events, compaction, moderation, embeddings) all get clean ids.
 *
 * Only the few identifier fields are looked at, where each API keeps them: the answer's own, and those of the
 * one object an event wraps (`message` of Anthropic's `message_start`, `response` of a Responses event, `item`
 * of an output-item event) and of a Response's `output` items. The model's content (message text, tool
 * arguments, reasoning) is left alone: it is the answer itself, which the gateway does not rewrite (SECURITY.md,
 * "Not promised"), and scanning it would put the scrubber on every byte of every stream.
 *
 * Cost: on a stream this runs per chunk, so it reads a handful of properties, calls the scrubber's `test` (a
 * scan of a few integer operations per four characters, no allocation) only on a field that is there and
 * differs from the clean value it last saw (a stream repeats one `id` and `model` in every chunk), and
 * `scrub` only on a hit.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { Scrubber } from "../../secrets/scrubber.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";

/**
 * The identifier fields of every answer shape the gateway forwards: OpenAI chat completions and chunks (`id`,
 * `model`, `system_fingerprint`), Responses objects, events and items (`id`, `model`, `item_id`), Anthropic
 * messages (`id`, `model`), Gemini answers (`responseId`, `modelVersion`).
 */
const FIELDS = ["id", "model", "system_fingerprint", "item_id", "responseId", "modelVersion"] as const;
/** The objects an event wraps, whose identifiers are forwarded like the answer's own. */
const WRAPPED = ["message", "response", "item"] as const;

/** Scrubs an answer's identifiers in place; one per answer or stream (it remembers the clean values seen). */
export type IdScrub = (answer: JsonObject) => void;

/** An {@linkcode IdScrub} for `scrubber`; one per answer or stream. */
export function idScrub(scrubber: Scrubber): IdScrub {
  /** The last value of each field that tested clean: a stream's chunks repeat it, and it is not tested again. */
  const clean = new Map<string, string>();
  const fields = (object: JsonObject): void => {
    for (const field of FIELDS) {
      const value = object[field];
      if (typeof value !== "string" || clean.get(field) === value) continue;
      if (scrubber.test(value)) object[field] = scrubber.scrub(value);
      else clean.set(field, value);
    }
  };
  const items = (object: JsonObject): void => {
    const output = object.output;
    if (!Array.isArray(output)) return;
    for (const item of output) if (isObject(item)) fields(item);
  };
  return (answer) => {
    fields(answer);
    items(answer);
    for (const key of WRAPPED) {
      const wrapped = answer[key];
      if (!isObject(wrapped)) continue;
      fields(wrapped);
      items(wrapped);
    }
  };
}

/** `answer` with its identifiers scrubbed in place (a whole answer: one call). */
export function scrubAnswerIds<T extends object>(answer: T, scrubber: Scrubber | undefined): T {
  if (scrubber !== undefined && scrubber.size > 0) idScrub(scrubber)(answer as unknown as JsonObject);
  return answer;
}

/** The last stage of a stream whose chunks are JSON objects: each chunk's identifiers scrubbed in place. */
export function idScrubStage<T extends object>(scrubber: Scrubber): SyncTransformer<T, T> {
  const scrub = idScrub(scrubber);
  return {
    transform(chunk, controller) {
      scrub(chunk as unknown as JsonObject);
      controller.enqueue(chunk);
    },
  };
}
