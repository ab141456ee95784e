/**
 * What an upstream's success answer says of itself, scrubbed of the config's secrets before any client API sees
 * it: its identifiers (`id`, `model`, `system_fingerprint`, a tool call's id), why it ended (`finish_reason`,
 * `stop_reason`, `finishReason`, `finishMessage`), how it was served (`service_tier`, `usage`, `container`), an
 * event's `type`. An upstream that echoes the credential it was sent in any of them (a misconfigured proxy, a
 * fake, a hostile server) would otherwise hand the gateway's key to every client, whole or in a stream's every
 * chunk, and on into stored Responses; the same id and finish reasons are scrubbed out of spans too
 * (telemetry/request_trace.ts). Run once per answer in the provider skeleton (skeleton.ts), so the translated
 * paths (a chat completion, then Responses, Messages or Gemini built from it) and the native passthroughs
 * (Responses, Messages, Gemini bodies and events, compaction, moderation, embeddings) all get clean fields.
 *
 * Only the fields listed in {@linkcode WHERE} are looked at, where each API keeps them. The model's content
 * (message text, tool arguments and names, reasoning, `encrypted_content`, logprobs, citations, media) is left
 * alone: it is the answer itself, which the gateway does not rewrite (SECURITY.md, "Not promised"), and
 * scanning it would put the scrubber on every byte of every stream. One rule reaches past the list: an event
 * whose `type` holds a secret is no event any API defines, so every string in it is scrubbed (that costs
 * nothing until an upstream does it).
 *
 * Cost: on a stream this runs per chunk. It reads the chunk's own keys and those of the few objects listed under
 * them (a chunk of text is two or three small objects), calls the scrubber's `test` (a scan of a few integer
 * operations per four characters, no allocation) only on a listed string that differs from the clean value last
 * seen in its place (a stream repeats one `id`, `model`, `service_tier`, `finish_reason` or event `type` in
 * chunk after chunk: each is tested once per change), and `scrub` only on a hit. A whole answer keeps no such
 * memory.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { Scrubber } from "../../secrets/scrubber.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";

/** What is looked at in one object of an answer, named in {@linkcode WHERE} by the field that holds it. */
interface Place {
  /** Strings that say something of the answer: each tested, masked on a hit. */
  readonly scrub?: readonly string[];
  /** Small objects (or arrays) of such strings, no content in them: every string in them, at any depth. */
  readonly leaves?: readonly string[];
  /** The objects, or arrays of objects, the answer wraps: each looked at by its own entry of WHERE. */
  readonly within?: readonly string[];
}

/** The content of an Anthropic message, a Responses message or a Gemini candidate (`content`, `content_block`). */
const CONTENT: Place = {
  // A tool_use / server_tool_use block's `id` (`toolu_…`), a tool result's `tool_use_id`; Gemini's `role`.
  scrub: ["type", "id", "tool_use_id", "role"],
  within: ["content", "parts"],
};

/** A Responses output item, in a Response's `output` or an event's `item` (a function call's `call_id`). */
const ITEM: Place = { scrub: ["id", "type", "status", "role", "call_id"], within: ["content"] };

/**
 * Where each API keeps the fields of a success answer that are not the model's content, by the field that holds
 * the object ("" is the answer or event itself). A field name means the same in every API that uses it, so one
 * table serves all; an object is looked at only under a name listed here, never found by searching.
 */
const WHERE: Readonly<Record<string, Place>> = {
  "": {
    scrub: [
      // Chat completions and chunks; Responses objects and events; Anthropic messages and events.
      "id",
      "object",
      "type",
      "model",
      "system_fingerprint",
      "service_tier",
      "status",
      "user",
      "safety_identifier",
      "prompt_cache_key",
      "role",
      "stop_reason",
      "stop_sequence",
      "item_id",
      // OpenRouter's name of the provider that answered; the random padding of a Responses delta event.
      "provider",
      "obfuscation",
      // Gemini answers and stream chunks.
      "responseId",
      "modelVersion",
    ],
    // Bedrock adds its invocation metrics to a Messages stream's last event; `metadata` is a Response's.
    leaves: [
      "usage",
      "incomplete_details",
      "metadata",
      "container",
      "amazon-bedrock-invocationMetrics",
      "usageMetadata",
      "promptFeedback",
    ],
    within: [
      "choices",
      "output",
      "conversation",
      "content",
      // The object an event wraps: Anthropic's `message_start`, `content_block_start`, `*_delta`; a Responses
      // event's `response`, `item`, `part`.
      "message",
      "content_block",
      "delta",
      "response",
      "item",
      "part",
      "candidates",
    ],
  },
  // Chat completions: a choice (`stop_reason`: the stop string vLLM names), its message or delta, tool calls.
  choices: { scrub: ["finish_reason", "stop_reason"], within: ["message", "delta"] },
  // A chat completion's message; an Anthropic message in `message_start`.
  message: {
    scrub: ["id", "type", "role", "model", "stop_reason", "stop_sequence"],
    leaves: ["usage", "container"],
    within: ["content", "tool_calls", "audio"],
  },
  // A chat chunk's delta; Anthropic's content_block_delta (`type`) and message_delta (why it stopped, its
  // container).
  delta: {
    scrub: ["role", "type", "stop_reason", "stop_sequence"],
    leaves: ["container"],
    within: ["tool_calls"],
  },
  tool_calls: { scrub: ["id", "type"] },
  audio: { scrub: ["id"] },
  content: CONTENT,
  content_block: CONTENT,
  // Responses: a Response in an event, its output items, a content part, a conversation.
  response: {
    scrub: [
      "id",
      "object",
      "model",
      "status",
      "service_tier",
      "user",
      "safety_identifier",
      "prompt_cache_key",
    ],
    leaves: ["usage", "incomplete_details", "metadata"],
    within: ["output", "conversation"],
  },
  output: ITEM,
  item: ITEM,
  part: { scrub: ["type"] },
  conversation: { scrub: ["id"] },
  // Gemini: why a candidate ended and its safety ratings; a function call's `id` in its parts.
  candidates: { scrub: ["finishReason", "finishMessage"], leaves: ["safetyRatings"], within: ["content"] },
  parts: { within: ["functionCall"] },
  functionCall: { scrub: ["id"] },
};

/** What is done with a listed field's value. */
const SCRUB = 0;
const LEAVES = 1;
const WITHIN = 2;

/** A listed field: what is done with it, its place in a stream's memory of clean values, where it leads. */
interface Field {
  readonly kind: typeof SCRUB | typeof LEAVES | typeof WITHIN;
  readonly slot: number;
  node?: Node;
}
/** One {@linkcode Place}, compiled: its fields by name. */
type Node = Map<string, Field>;

/** How deep the walk goes: the deepest listed place is four objects down (a Gemini part's `functionCall`). */
const MAX_DEPTH = 8;

/** {@linkcode WHERE} compiled once: a node per place, a memory slot per field that holds strings. */
const { top: TOP, slots: SLOTS, topType: TOP_TYPE } = (() => {
  const nodes = new Map<string, Node>();
  for (const name of Object.keys(WHERE)) nodes.set(name, new Map());
  let slots = 0;
  for (const [name, place] of Object.entries(WHERE)) {
    const node = nodes.get(name)!;
    const add = (field: string, entry: Field) => {
      if (node.has(field)) throw new Error(`answer_fields: "${field}" is listed twice in "${name}"`);
      node.set(field, entry);
    };
    for (const field of place.scrub ?? []) add(field, { kind: SCRUB, slot: slots++ });
    for (const field of place.leaves ?? []) add(field, { kind: LEAVES, slot: slots++ });
    for (const field of place.within ?? []) {
      const next = nodes.get(field);
      if (next === undefined) {
        throw new Error(`answer_fields: "${field}" is within "${name}" but has no place`);
      }
      add(field, { kind: WITHIN, slot: -1, node: next });
    }
  }
  const top = nodes.get("")!;
  return { top, slots, topType: top.get("type")!.slot };
})();
/** The slot of every string of an event of no defined type. */
const EVERY = SLOTS;

/** One answer's or one stream's walk over {@linkcode WHERE}. */
class FieldWalk {
  readonly #scrubber: Scrubber;
  /** The last value of each slot that tested clean (a stream's), or none kept (a whole answer's). */
  readonly #clean: (string | undefined)[] | undefined;
  /** Set when the answer's own `type` held a secret: no defined event, so all of it is scrubbed. */
  #unknown = false;

  constructor(scrubber: Scrubber, remember: boolean) {
    this.#scrubber = scrubber;
    this.#clean = remember ? new Array(SLOTS + 1) : undefined;
  }

  /** Scrubs `answer` in place. */
  run(answer: JsonObject): void {
    this.#walk(answer, TOP, 0);
    if (!this.#unknown) return;
    this.#unknown = false;
    this.#leaves(answer, EVERY, 0);
  }

  /** `value` if clean (remembered in `slot`), else masked. */
  #checked(value: string, slot: number): string {
    const clean = this.#clean;
    if (clean !== undefined && clean[slot] === value) return value;
    if (this.#scrubber.test(value)) {
      if (slot === TOP_TYPE) this.#unknown = true;
      return this.#scrubber.scrub(value);
    }
    if (clean !== undefined) clean[slot] = value;
    return value;
  }

  #walk(object: JsonObject, node: Node, depth: number): void {
    for (const key in object) {
      const field = node.get(key);
      if (field === undefined) continue;
      const value = object[key];
      if (field.kind === SCRUB) {
        if (typeof value === "string") object[key] = this.#checked(value, field.slot);
      } else if (typeof value === "object" && value !== null && depth < MAX_DEPTH) {
        if (field.kind === LEAVES) this.#leaves(value as JsonObject, field.slot, depth + 1);
        else if (!Array.isArray(value)) this.#walk(value as JsonObject, field.node!, depth + 1);
        else for (const item of value) if (isObject(item)) this.#walk(item, field.node!, depth + 1);
      }
    }
  }

  /** Every string in `value` (an object or array), at any depth up to the bound, checked against `slot`. */
  #leaves(value: JsonObject | unknown[], slot: number, depth: number): void {
    if (depth > MAX_DEPTH) return;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        if (typeof item === "string") value[i] = this.#checked(item, slot);
        else if (typeof item === "object" && item !== null) this.#leaves(item as JsonObject, slot, depth + 1);
      }
      return;
    }
    for (const key in value) {
      const item = value[key];
      if (typeof item === "string") value[key] = this.#checked(item, slot);
      else if (typeof item === "object" && item !== null) this.#leaves(item as JsonObject, slot, depth + 1);
    }
  }
}

/** Scrubs an answer's fields in place; one per answer or stream (a stream's remembers the clean values seen). */
export type FieldScrub = (answer: JsonObject) => void;

/**
 * A {@linkcode FieldScrub} for `scrubber` that keeps, per place, the last value that tested clean, so a stream's
 * repeated values are tested once.
 */
export function fieldScrub(scrubber: Scrubber): FieldScrub {
  const walk = new FieldWalk(scrubber, true);
  return (answer) => walk.run(answer);
}

/** `answer` with its fields scrubbed in place (a whole answer: one call). */
export function scrubAnswerFields<T extends object>(answer: T, scrubber: Scrubber | undefined): T {
  if (scrubber !== undefined && scrubber.size > 0) {
    new FieldWalk(scrubber, false).run(answer as unknown as JsonObject);
  }
  return answer;
}

/** The last stage of a stream whose chunks are JSON objects: each chunk's fields scrubbed in place. */
export function fieldScrubStage<T extends object>(scrubber: Scrubber): SyncTransformer<T, T> {
  const scrub = fieldScrub(scrubber);
  return {
    transform(chunk, controller) {
      scrub(chunk as unknown as JsonObject);
      controller.enqueue(chunk);
    },
  };
}
