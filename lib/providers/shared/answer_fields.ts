/**
 * What an upstream's success answer says of itself, scrubbed of the config's secrets before any client API sees
 * it: its identifiers (`id`, `model`, `system_fingerprint`, a tool call's id), why it ended (`finish_reason`,
 * `stop_reason`, `finishReason`, `finishMessage`), how it was served (`service_tier`, `usage`, `container`), an
 * event's `type`, and what it repeats of the request it answers (a Response's `instructions`, `tools`, `text`,
 * `metadata` and the other settings; a Messages answer's `context_management`). An upstream that echoes the
 * credential it was sent in any of them (a misconfigured proxy, a fake, a hostile server) would otherwise hand
 * the gateway's key to every client, whole or in a stream's every chunk, and on into stored Responses; the same
 * id and finish reasons are scrubbed out of spans too (telemetry/request_trace.ts). Run once per answer in the
 * provider skeleton (skeleton.ts), so the translated paths (a chat completion, then Responses, Messages or
 * Gemini built from it) and the native passthroughs (Responses, Messages, Gemini bodies and events, compaction,
 * moderation, embeddings) all get clean fields.
 *
 * Only the fields listed in {@linkcode WHERE} are looked at, where each API keeps them. A whole Response is
 * looked at as the Response an event wraps is (its own place, not the answer's): its settings are listed only
 * there, since an event's own `text` is the model's (`response.output_text.done`). The model's content (message
 * text, tool arguments and names, reasoning, `encrypted_content`, logprobs, citations, media) is left alone: it
 * is the answer itself, which the gateway does not rewrite (SECURITY.md, "Not promised"), and scanning it would
 * put the scrubber on every byte of every stream. One rule reaches past the list: an event whose `type` holds a
 * secret is no event any API defines, so every string in it is scrubbed (that costs nothing until an upstream
 * does it).
 *
 * Cost: on a stream this runs per chunk. It reads the chunk's own keys and those of the few objects listed under
 * them (a chunk of text is two or three small objects), calls the scrubber's `test` (a scan of a few integer
 * operations per four characters, no allocation) only on a listed string that differs from the clean value last
 * seen in its place (a stream repeats one `id`, `model`, `service_tier`, `finish_reason` or event `type` in
 * chunk after chunk: each is tested once per change), and `scrub` only on a hit. A field of strings (`usage`, a
 * Response's settings) has every string and key in it tested, at any depth, in place: a Response's settings
 * come only in the few events that wrap a whole Response (`response.created`, `.in_progress`, the final one),
 * never in a delta, and a setting that is one string repeated (`instructions`) is tested once. A whole answer
 * keeps no such memory; one passed through as sent is walked only when its text may hold a secret
 * ({@linkcode scrubAnswerFields}). Whatever an upstream puts in the fields (half a million keys, the key in each),
 * the walk costs in proportion to them, a few steps a key and a character (answer_fields_work_test.ts).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { Scrubber } from "../../secrets/scrubber.ts";
import { jsonMayHold } from "../../secrets/scrub_json.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";

/** What is looked at in one object of an answer, named in {@linkcode WHERE} by the field that holds it. */
interface Place {
  /** Strings that say something of the answer: each tested, masked on a hit. */
  readonly scrub?: readonly string[];
  /** Small objects (or arrays) of such strings, no content in them: every string and key in them, at any depth. */
  readonly leaves?: readonly string[];
  /**
   * What the request asked for and the answer repeats (instructions, tool declarations, formats, metadata): the
   * client's words, not the model's, so no content. Looked at as `leaves` are: the field itself when it is a
   * string, else every string and key in it, at any depth (a tool's parameter schema nests as deep as it likes).
   */
  readonly settings?: readonly string[];
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
 * The request settings a Response repeats (OpenAI's Response object): the instructions (a string, or the input
 * items of a prompt template), the tools declared (descriptions, parameter schemas), the tool choice, the text
 * format and its schema, reasoning, the prompt template and its variables, metadata (its keys too), the end
 * user's ids, the cache key and retention, truncation. Its numbers and flags are listed as well: a string an
 * upstream puts there costs one test, and none is looked at when it is a number.
 */
const RESPONSE_SETTINGS: readonly string[] = [
  "instructions",
  "tools",
  "tool_choice",
  "text",
  "reasoning",
  "prompt",
  "metadata",
  "user",
  "safety_identifier",
  "prompt_cache_key",
  "prompt_cache_retention",
  "truncation",
  "max_output_tokens",
  "max_tool_calls",
  "temperature",
  "top_p",
  "top_logprobs",
  "parallel_tool_calls",
  "background",
  "store",
];

/**
 * Where each API keeps the fields of a success answer that are not the model's content, by the field that holds
 * the object ("" is the answer or event itself, but a whole Response: "response"). A field name means the same
 * in every API that uses it, so one table serves all; an object is looked at only under a name listed here,
 * never found by searching.
 */
const WHERE: Readonly<Record<string, Place>> = {
  "": {
    scrub: [
      // Chat completions and chunks; Responses events and compactions; Anthropic messages and events.
      "id",
      "object",
      "type",
      "model",
      "system_fingerprint",
      "service_tier",
      "status",
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
    // Bedrock adds its invocation metrics to a Messages stream's last event.
    leaves: ["usage", "container", "amazon-bedrock-invocationMetrics", "usageMetadata", "promptFeedback"],
    // A Messages answer's context edits (a stream's in `message_delta`), which its request asked for.
    settings: ["context_management"],
    within: [
      "choices",
      "output",
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
    settings: ["context_management"],
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
  // Responses: a Response, whole or in an event (how it was billed: `billing`); its output items, a content
  // part, a conversation.
  response: {
    scrub: ["id", "object", "model", "status", "service_tier"],
    leaves: ["usage", "incomplete_details", "billing"],
    settings: RESPONSE_SETTINGS,
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

/** How deep the walk of places goes: the deepest listed place is four objects down (a Gemini part's `functionCall`). */
const MAX_DEPTH = 8;

/** {@linkcode WHERE} compiled once: a node per place, a memory slot per field that holds strings. */
const { top: TOP, response: RESPONSE, slots: SLOTS, topType: TOP_TYPE } = (() => {
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
    for (const field of place.settings ?? []) add(field, { kind: LEAVES, slot: slots++ });
    for (const field of place.within ?? []) {
      const next = nodes.get(field);
      if (next === undefined) {
        throw new Error(`answer_fields: "${field}" is within "${name}" but has no place`);
      }
      add(field, { kind: WITHIN, slot: -1, node: next });
    }
  }
  const top = nodes.get("")!;
  return { top, response: nodes.get("response")!, slots, topType: top.get("type")!.slot };
})();
/** How many short clean strings of `leaves` fields a stream remembers, and how long each may be. */
const CLEAN_SHORT_MAX = 256;
const CLEAN_SHORT_LENGTH = 64;
/** The slot of every string of an event of no defined type. */
const EVERY = SLOTS;

/** One answer's or one stream's walk over {@linkcode WHERE}. */
class FieldWalk {
  readonly #scrubber: Scrubber;
  /** The last value of each slot that tested clean (a stream's), or none kept (a whole answer's). */
  readonly #clean: (string | undefined)[] | undefined;
  /**
   * The short strings of `leaves` fields that tested clean (a stream's): keys and names such a field repeats in
   * every chunk (`usageMetadata`'s `promptTokenCount`, a safety rating's `HARM_CATEGORY_…`), which one last value
   * per slot never matches, so each is tested once per stream. Bounded: {@linkcode CLEAN_SHORT_MAX} strings of
   * at most {@linkcode CLEAN_SHORT_LENGTH} characters.
   */
  readonly #cleanShort: Set<string> | undefined;
  /** Set when the answer's own `type` held a secret: no defined event, so all of it is scrubbed. */
  #unknown: boolean;

  constructor(scrubber: Scrubber, remember: boolean) {
    this.#scrubber = scrubber;
    this.#unknown = false;
    this.#clean = remember ? new Array(SLOTS + 1) : undefined;
    this.#cleanShort = remember ? new Set() : undefined;
  }

  /** Scrubs `answer` in place, looked at as the place `start` (the answer's, or a Response's). */
  run(answer: JsonObject, start: Node = TOP): void {
    this.#walk(answer, start, 0);
    if (!this.#unknown) return;
    this.#unknown = false;
    this.#leaves(answer, EVERY);
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

  /**
   * `value` (a key or string inside a `leaves` field) if clean, else masked; a short clean one remembered for the
   * rest of the stream, a longer one as in {@linkcode FieldWalk.#checked}.
   */
  #checkedLeaf(value: string, slot: number): string {
    const short = this.#cleanShort;
    if (short === undefined || value.length > CLEAN_SHORT_LENGTH) return this.#checked(value, slot);
    if (short.has(value)) return value;
    if (this.#scrubber.test(value)) return this.#scrubber.scrub(value);
    if (short.size < CLEAN_SHORT_MAX) short.add(value);
    return value;
  }

  #walk(object: JsonObject, node: Node, depth: number): void {
    for (const key in object) {
      const field = node.get(key);
      if (field === undefined) continue;
      const value = object[key];
      if (field.kind === SCRUB) {
        if (typeof value === "string") object[key] = this.#checked(value, field.slot);
      } else if (field.kind === LEAVES) {
        if (typeof value === "string") object[key] = this.#checked(value, field.slot);
        else if (typeof value === "object" && value !== null) this.#leaves(value as JsonObject, field.slot);
      } else if (typeof value === "object" && value !== null && depth < MAX_DEPTH) {
        if (!Array.isArray(value)) this.#walk(value as JsonObject, field.node!, depth + 1);
        else for (const item of value) if (isObject(item)) this.#walk(item, field.node!, depth + 1);
      }
    }
  }

  /**
   * Every string in `value` (an object or array) and every key of an object in it, at any depth, checked against
   * `slot` and masked in place; a key that holds a secret is replaced by its mask (a later key that masks alike
   * keeps its value, as a duplicate key in JSON text does: a mask never leaves the secret). Without recursion, so
   * an upstream's deepest nesting is walked to its end and never overflows the stack.
   */
  #leaves(value: JsonObject | unknown[], slot: number): void {
    const pending: (JsonObject | unknown[])[] = [value];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (Array.isArray(next)) {
        for (let i = 0; i < next.length; i++) {
          const item = next[i];
          if (typeof item === "string") {
            const checked = this.#checkedLeaf(item, slot);
            if (checked !== item) next[i] = checked;
          } else if (typeof item === "object" && item !== null) pending.push(item as JsonObject);
        }
        continue;
      }
      let masked: string[] | undefined;
      for (const key in next) {
        const item = next[key];
        // Written back only when masked: a store into an object of many keys costs more than the check.
        if (typeof item === "string") {
          const checked = this.#checkedLeaf(item, slot);
          if (checked !== item) next[key] = checked;
        } else if (typeof item === "object" && item !== null) pending.push(item as JsonObject);
        const mask = this.#checkedLeaf(key, slot);
        if (mask !== key) (masked ??= []).push(key, mask);
      }
      if (masked !== undefined) maskKeys(next, masked);
    }
  }
}

/** `object` with each key of `masked` (pairs: a key that holds a secret, its mask) replaced by its mask. */
function maskKeys(object: JsonObject, masked: readonly string[]): void {
  for (let i = 0; i < masked.length; i += 2) {
    const key = masked[i];
    const mask = masked[i + 1];
    const item = object[key];
    delete object[key];
    // A mask holds MASK, so it is never `__proto__` (whose assignment would set the prototype): defined if it were.
    if (mask === "__proto__") Object.defineProperty(object, mask, { ...DATA, value: item });
    else object[mask] = item;
  }
}

/** A plain data property's attributes, as an assignment makes one. */
const DATA = { enumerable: true, writable: true, configurable: true } as const;

/** Scrubs an answer's fields in place; one per answer or stream (a stream's remembers the clean values seen). */
export type FieldScrub = (answer: JsonObject) => void;

/** What a whole answer is: a Response (`"response"`: a native Responses answer), or any other (`"answer"`). */
export type AnswerKind = "answer" | "response";

/**
 * A {@linkcode FieldScrub} for `scrubber` that keeps, per place, the last value that tested clean, so a stream's
 * repeated values are tested once.
 */
export function fieldScrub(scrubber: Scrubber): FieldScrub {
  const walk = new FieldWalk(scrubber, true);
  return (answer) => walk.run(answer);
}

/**
 * `answer` with its fields scrubbed in place (a whole answer: one call); `kind` says whether it is a Response,
 * whose settings are looked at where only a Response has them. `text` is the JSON text `answer` was parsed from,
 * when it is exactly that: when it has no escape and the scrubber finds nothing in it (scrub_json.ts
 * `jsonMayHold`), no string or key of the answer holds anything to mask and the walk is skipped, so such a clean
 * answer costs one scan of its text however many keys it has. Any other answer is walked, at a cost in
 * proportion to the fields walked (a few steps per key and per character, however much of them is secret).
 */
export function scrubAnswerFields<T extends object>(
  answer: T,
  scrubber: Scrubber | undefined,
  kind: AnswerKind = "answer",
  text?: string,
): T {
  if (
    scrubber !== undefined && scrubber.size > 0 && (text === undefined || jsonMayHold(text, scrubber))
  ) {
    new FieldWalk(scrubber, false).run(answer as unknown as JsonObject, kind === "response" ? RESPONSE : TOP);
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
