/**
 * A chat chunk stream added up, as it passes, into the completion it amounts to (in the normal form of
 * chunks.ts), within a bound: an answer that grows past the entry size is dropped as soon as it does, so a
 * long stream on a cached alias holds no more of it in memory than an entry may have.
 *
 * @module
 */
import type {
  ChatCompletion,
  ChatCompletionChunk,
  JsonObject,
  ReasoningFields,
  Usage,
} from "../openai/types.ts";
import { isObject } from "../openai/types.ts";
import {
  annotationsOf,
  buildCompletion,
  type ChoiceParts,
  type Frame,
  frameOf,
  keptFields,
} from "./chunks.ts";

/** A choice being added up from its deltas. */
interface OpenChoice {
  role?: string;
  content: string[];
  reasoning: string[];
  refusal: string[];
  annotations: JsonObject[];
  calls: Map<number, { id?: string; type?: string; name?: string; arguments: string[] }>;
  functionCall?: { name?: string; arguments: string[] };
  finish?: string;
  stopReason?: string;
}

/**
 * Adds a tool call fragment to its call; the text it added (arguments, or a custom tool's input: its fragments
 * carry `custom: {name, input}` where a function call's carry `function: {name, arguments}`).
 */
function addCall(open: OpenChoice, call: JsonObject, position: number): number {
  const index = typeof call.index === "number" ? call.index : position;
  let into = open.calls.get(index);
  if (into === undefined) {
    into = { arguments: [] };
    open.calls.set(index, into);
  }
  if (into.type === undefined) {
    if (typeof call.type === "string" && call.type !== "") into.type = call.type;
    else if (isObject(call.custom) && !isObject(call.function)) into.type = "custom";
  }
  const custom = into.type === "custom";
  const part = custom ? call.custom : call.function;
  const fn = isObject(part) ? part : {};
  const text = custom ? fn.input : fn.arguments;
  if (into.id === undefined && typeof call.id === "string" && call.id !== "") into.id = call.id;
  if (into.name === undefined && typeof fn.name === "string" && fn.name !== "") into.name = fn.name;
  if (typeof text !== "string") return 0;
  into.arguments.push(text);
  return text.length;
}

/** A legacy `function_call` delta: the name of the first fragment that has one, the arguments in order. */
function addFunctionCall(open: OpenChoice, fn: JsonObject): number {
  const into = open.functionCall ??= { arguments: [] };
  if (into.name === undefined && typeof fn.name === "string" && fn.name !== "") into.name = fn.name;
  if (typeof fn.arguments !== "string") return 0;
  into.arguments.push(fn.arguments);
  return fn.arguments.length;
}

/**
 * Adds up a chat chunk stream as it passes, into the completion it amounts to. Feed it every chunk the
 * upstream sent, before a stream body presents them (the chat body renames `model` to the alias and drops the
 * usage chunk the client did not ask for). Tool calls are joined by their `index` (parallel calls may
 * interleave): the id and name of the first fragment that has them, the arguments in order.
 *
 * Bounded by `maxBytes` (`cache.max_entry_bytes`): it counts the text its deltas add (UTF-16 units, never more
 * than the UTF-8 bytes of the entry they end up in, so an answer that would fit is never given up), and once
 * past the bound drops what it held and ignores the rest of the stream ({@linkcode stopped}); the answer is
 * then no entry's. Without the bound a stream of any length was held whole until it ended, only for the
 * store to refuse it.
 */
export class ChunkAccumulator {
  #frame: Frame | undefined;
  #choices = new Map<number, OpenChoice>();
  #usage: Usage | undefined;
  readonly #maxBytes: number;
  #bytes = 0;
  #stopped = false;

  constructor(maxBytes = Number.POSITIVE_INFINITY) {
    this.#maxBytes = maxBytes;
  }

  /** Whether the answer grew past the bound: what was held is dropped, and there is no completion. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** The text held so far (UTF-16 units of the deltas' strings); 0 once stopped. */
  get heldBytes(): number {
    return this.#bytes;
  }

  add(chunk: ChatCompletionChunk): void {
    if (this.#stopped) return;
    this.#take(chunk);
    if (this.#bytes > this.#maxBytes) {
      this.#stopped = true;
      this.#choices = new Map();
      this.#frame = undefined;
      this.#usage = undefined;
      this.#bytes = 0;
    }
  }

  /** Counts `text` as held and passes it on. */
  #count<T extends string>(text: T): T {
    this.#bytes += text.length;
    return text;
  }

  #take(chunk: ChatCompletionChunk): void {
    this.#frame ??= frameOf(chunk, chunk.id, chunk.created);
    if (this.#frame.systemFingerprint === undefined && typeof chunk.system_fingerprint === "string") {
      this.#frame.systemFingerprint = chunk.system_fingerprint;
    }
    // Perplexity repeats its sources on every chunk: the last ones seen are the answer's.
    const kept = keptFields(chunk);
    if (kept !== undefined) this.#frame.kept = { ...this.#frame.kept, ...kept };
    if (isObject(chunk.usage)) this.#usage = structuredClone(chunk.usage as Usage);
    for (const choice of chunk.choices) {
      if (!isObject(choice)) continue;
      const index = typeof choice.index === "number" ? choice.index : 0;
      let open = this.#choices.get(index);
      if (open === undefined) {
        open = { content: [], reasoning: [], refusal: [], annotations: [], calls: new Map() };
        this.#choices.set(index, open);
      }
      const delta = (isObject(choice.delta) ? choice.delta : {}) as JsonObject & ReasoningFields;
      if (open.role === undefined && typeof delta.role === "string") open.role = delta.role;
      if (typeof delta.reasoning_content === "string") {
        open.reasoning.push(this.#count(delta.reasoning_content));
      }
      if (typeof delta.content === "string") open.content.push(this.#count(delta.content));
      if (typeof delta.refusal === "string") open.refusal.push(this.#count(delta.refusal));
      const annotations = annotationsOf(delta);
      if (annotations !== undefined) {
        this.#count(JSON.stringify(annotations));
        open.annotations.push(...annotations);
      }
      const calls = Array.isArray(delta.tool_calls) ? delta.tool_calls : [];
      calls.forEach((call, position) => {
        if (isObject(call)) this.#bytes += addCall(open, call, position);
      });
      if (isObject(delta.function_call)) this.#bytes += addFunctionCall(open, delta.function_call);
      if (typeof choice.finish_reason === "string") open.finish = choice.finish_reason;
      if (typeof choice.stop_reason === "string") open.stopReason = choice.stop_reason;
    }
  }

  /**
   * The whole completion, in the normal form (chunks.ts's `normaliseCompletion`); undefined while the stream
   * is not a complete answer (no choice yet, or a choice without its `finish_reason`) or once it outgrew the
   * bound ({@linkcode stopped}), which is never stored.
   */
  completion(): ChatCompletion | undefined {
    if (this.#stopped || this.#frame === undefined || this.#choices.size === 0) return undefined;
    const choices: ChoiceParts[] = [];
    for (const [index, open] of this.#choices) {
      if (open.finish === undefined) return undefined;
      const parts: ChoiceParts = {
        index,
        role: open.role ?? "assistant",
        content: open.content.join(""),
        reasoning: open.reasoning.join(""),
        refusal: open.refusal.join(""),
        calls: [...open.calls].sort(([a], [b]) => a - b).map(([, call]) => ({
          id: call.id ?? "",
          type: call.type ?? "function",
          name: call.name ?? "",
          arguments: call.arguments.join(""),
        })),
        finish: open.finish,
      };
      if (open.stopReason !== undefined) parts.stopReason = open.stopReason;
      if (open.annotations.length > 0) parts.annotations = open.annotations;
      if (open.functionCall !== undefined) {
        parts.functionCall = {
          name: open.functionCall.name ?? "",
          arguments: open.functionCall.arguments.join(""),
        };
      }
      choices.push(parts);
    }
    return buildCompletion(this.#frame, choices, this.#usage);
  }
}
