/**
 * A cached completion as a stream and a stream as a completion. An entry holds one chat-form completion
 * whatever filled it; a streamed hit is replayed as the chunks an OpenAI upstream would have sent for it (with
 * `stream_options.include_usage` on), so the chat, Messages and Responses stream bodies run exactly as they do
 * for a real upstream; and a streamed miss is added up, chunk by chunk as it passes, into the completion the
 * entry stores (chunk_accumulator.ts, with the helpers exported here).
 *
 * Both directions go through one normal form ({@linkcode normaliseCompletion}): what a replay carries, and only
 * that. The cache stores the normal form, so `accumulate(completionChunks(c))` is `c` exactly and a hit looks
 * the same streamed or not. Kept beside the text and tool calls, because a chat client reads them on a miss
 * (JSON or streamed: the chat API passes the upstream's fields through): a message's `annotations` (URL
 * citations; a stream sends them as `delta.annotations`, replayed as one such delta after the content), the
 * legacy `function_call` (a client that sent `functions` reads its call there, not in `tool_calls`; streamed as
 * OpenAI does, its name then its argument pieces) and the top-level {@linkcode KEPT_TOP_LEVEL} fields
 * (Perplexity's sources, on every chunk as Perplexity streams them).
 * Left out: `logprobs` (always `null`: the chunks would have to split them token by token, and a cached
 * answer's token probabilities are not a fresh sample's; a request asking for them is never cached) and
 * `audio` (an answer carrying it is never cached: lib/answer/cached_route.ts). A tool call is a `function` call
 * or a custom (freeform) tool's call, `{type: "custom", custom: {name, input}}`, kept as such: a client that
 * declared a custom tool reads its call there (a call of any other type is never cached). A custom call is
 * replayed as one delta of the whole call: OpenAI's chunk schema documents function deltas only, and one whole
 * delta reads the same to a client that adds pieces up as to one that does not. An empty `annotations` array is
 * no annotations, as a `null` refusal is no refusal.
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

/** One tool call of a choice, in the normal form. */
export interface CallParts {
  id: string;
  /** `function`, or `custom` for a custom tool's call (its name and input in `name` and `arguments`). */
  type: string;
  name: string;
  arguments: string;
}

/** The tool call types an entry keeps and replays as they came. */
export const CACHED_CALL_TYPES: readonly string[] = ["function", "custom"];

/** One choice in the normal form: what a replay carries and the accumulator adds up. */
export interface ChoiceParts {
  index: number;
  role: string;
  content: string;
  reasoning: string;
  refusal: string;
  calls: CallParts[];
  finish: string;
  /** vLLM's matched stop sequence (a string only); the Messages API turns it into `stop_sequence`. */
  stopReason?: string;
  /** The message's `annotations`, when it has any. */
  annotations?: JsonObject[];
  /** The legacy `function_call` (OpenAI's answer to `functions`), when the message has one. */
  functionCall?: { name: string; arguments: string };
}

/** The fields every chunk and the completion share. */
export interface Frame {
  id: string;
  created: number;
  model: string;
  systemFingerprint?: string;
  serviceTier?: string;
  /** The {@linkcode KEPT_TOP_LEVEL} fields the answer has. */
  kept?: JsonObject;
}

/**
 * Top-level fields of an upstream's answer outside OpenAI's schema that a chat client reads and that belong to
 * the answer (not to one request or one chunk): Perplexity's `citations` and `search_results`, in its JSON
 * answer and on every chunk of its stream. Others (per-chunk padding, a vendor's request ids) are not kept.
 */
export const KEPT_TOP_LEVEL = ["citations", "search_results"] as const;

/** `source`'s {@linkcode KEPT_TOP_LEVEL} fields (copies), or undefined when it has none. */
export function keptFields(source: JsonObject): JsonObject | undefined {
  let kept: JsonObject | undefined;
  for (const key of KEPT_TOP_LEVEL) {
    if (source[key] !== undefined && source[key] !== null) (kept ??= {})[key] = structuredClone(source[key]);
  }
  return kept;
}

/** A message's or delta's `annotations` (objects only), or undefined when it has none. */
export function annotationsOf(message: JsonObject): JsonObject[] | undefined {
  const list = Array.isArray(message.annotations) ? message.annotations.filter(isObject) : [];
  return list.length > 0 ? structuredClone(list) : undefined;
}

/** Replayed text pieces are at most this many UTF-16 units (a few tokens, as upstreams stream them); a piece prefers to end after a space. */
const PIECE_MAX = 16;
/** The shortest piece that ends at a space; without a space in reach a piece is {@linkcode PIECE_PLAIN} long. */
const PIECE_MIN = 4;
const PIECE_PLAIN = 12;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * `text` in stream-sized pieces (none for ""), so a replayed stream is really a stream: each piece ends after
 * a space where one is in reach, and never between the two halves of a surrogate pair (an emoji stays whole;
 * a lone half would be a broken character on the wire).
 */
export function splitText(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  while (start < text.length) {
    let end = Math.min(start + PIECE_MAX, text.length);
    if (end < text.length) {
      const space = text.slice(start + PIECE_MIN, end).search(/\s\S*$/);
      end = space >= 0 ? start + PIECE_MIN + space + 1 : start + PIECE_PLAIN;
      if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
    }
    pieces.push(text.slice(start, end));
    start = end;
  }
  return pieces;
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}

/** A choice of a completion in the normal form; `position` stands in for a missing `index`. */
function choiceParts(choice: JsonObject, position: number): ChoiceParts {
  const message = (isObject(choice.message) ? choice.message : {}) as JsonObject & ReasoningFields;
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  const parts: ChoiceParts = {
    index: typeof choice.index === "number" ? choice.index : position,
    role: stringOr(message.role, "assistant"),
    content: stringOr(message.content, ""),
    reasoning: stringOr(message.reasoning_content, ""),
    refusal: stringOr(message.refusal, ""),
    calls: calls.map((call) => {
      const type = stringOr(call.type, "function");
      if (type === "custom") {
        const custom = isObject(call.custom) ? call.custom : {};
        return {
          id: stringOr(call.id, ""),
          type,
          name: stringOr(custom.name, ""),
          arguments: stringOr(custom.input, ""),
        };
      }
      const fn = isObject(call.function) ? call.function : {};
      return {
        id: stringOr(call.id, ""),
        type,
        name: stringOr(fn.name, ""),
        arguments: stringOr(fn.arguments, ""),
      };
    }),
    // A stored answer is a finished one; a missing reason is the ordinary end.
    finish: stringOr(choice.finish_reason, "stop"),
  };
  if (typeof choice.stop_reason === "string") parts.stopReason = choice.stop_reason;
  const annotations = annotationsOf(message);
  if (annotations !== undefined) parts.annotations = annotations;
  if (isObject(message.function_call)) {
    const fn = message.function_call;
    parts.functionCall = { name: stringOr(fn.name, ""), arguments: stringOr(fn.arguments, "") };
  }
  return parts;
}

/**
 * A choice's `message`. `content` is `null` when there is none beside tool calls or a refusal (as OpenAI sends
 * it), else the text (`""` for an empty answer); the optional fields appear only when they have text.
 */
function choiceObject(parts: ChoiceParts): JsonObject {
  const message: JsonObject = {
    role: parts.role,
    content: parts.content === "" && (parts.calls.length > 0 || parts.refusal !== "" || parts.functionCall)
      ? null
      : parts.content,
  };
  if (parts.reasoning !== "") message.reasoning_content = parts.reasoning;
  if (parts.refusal !== "") message.refusal = parts.refusal;
  if (parts.annotations !== undefined) message.annotations = structuredClone(parts.annotations);
  if (parts.calls.length > 0) {
    message.tool_calls = parts.calls.map((call) =>
      call.type === "custom"
        ? { id: call.id, type: call.type, custom: { name: call.name, input: call.arguments } }
        : { id: call.id, type: call.type, function: { name: call.name, arguments: call.arguments } }
    );
  }
  if (parts.functionCall !== undefined) message.function_call = { ...parts.functionCall };
  const choice: JsonObject = { index: parts.index, message, logprobs: null, finish_reason: parts.finish };
  if (parts.stopReason !== undefined) choice.stop_reason = parts.stopReason;
  return choice;
}

function frameFields(frame: Frame): JsonObject {
  const fields: JsonObject = {};
  if (frame.systemFingerprint !== undefined) fields.system_fingerprint = frame.systemFingerprint;
  if (frame.serviceTier !== undefined) fields.service_tier = frame.serviceTier;
  if (frame.kept !== undefined) Object.assign(fields, structuredClone(frame.kept));
  return fields;
}

export function buildCompletion(
  frame: Frame,
  choices: ChoiceParts[],
  usage: Usage | undefined,
): ChatCompletion {
  const completion: ChatCompletion = {
    id: frame.id,
    object: "chat.completion",
    created: frame.created,
    model: frame.model,
    ...frameFields(frame),
    choices: [...choices].sort((a, b) => a.index - b.index).map(choiceObject),
  };
  if (usage !== undefined) completion.usage = structuredClone(usage);
  return completion;
}

export function frameOf(source: JsonObject, id: string, created: number): Frame {
  const frame: Frame = { id, created, model: stringOr(source.model, "") };
  if (typeof source.system_fingerprint === "string") frame.systemFingerprint = source.system_fingerprint;
  if (typeof source.service_tier === "string") frame.serviceTier = source.service_tier;
  const kept = keptFields(source);
  if (kept !== undefined) frame.kept = kept;
  return frame;
}

/**
 * `completion` in the form the cache stores and a replay reproduces: choices sorted by index, each message
 * with only the fields a stream carries (see the module doc), `logprobs: null`, no `usage` key when it has
 * none. Store this, so a hit is the same answer streamed or not.
 */
export function normaliseCompletion(completion: ChatCompletion): ChatCompletion {
  const frame = frameOf(completion, completion.id, completion.created);
  const choices = completion.choices.map((choice, i) => choiceParts(choice, i));
  // Its own copy of the usage: the answer it was made from goes on to be rendered for its client.
  return buildCompletion(frame, choices, isObject(completion.usage) ? { ...completion.usage } : undefined);
}

/**
 * The chunks an OpenAI upstream would have streamed for `completion` with `stream_options.include_usage` on,
 * under `frame`'s id and `created` (a hit's own). Per choice, in index order: the role chunk
 * (`{role: "assistant", content: ""}`, as OpenAI starts), the reasoning pieces, the content pieces, the refusal
 * pieces, each tool call (its id and name with empty arguments, then the argument pieces; a custom tool's call
 * whole, in one delta), then an empty delta
 * with the choice's `finish_reason`. Last, when the completion has usage, the usage chunk with `choices: []`;
 * the chunks before it carry `usage: null` then, as OpenAI's do. Choices are not interleaved: the Messages and
 * Responses stream bodies read only `choices[0]` of each chunk, so they must only be given one-choice answers.
 */
export function completionChunks(
  completion: ChatCompletion,
  frame: { id: string; created: number },
): ChatCompletionChunk[] {
  const usage = isObject(completion.usage) ? completion.usage : undefined;
  const head = frameOf(completion, frame.id, frame.created);
  const chunk = (choices: JsonObject[]): ChatCompletionChunk => {
    const out: ChatCompletionChunk = {
      id: head.id,
      object: "chat.completion.chunk",
      created: head.created,
      model: head.model,
      ...frameFields(head),
      choices,
    };
    if (usage !== undefined) out.usage = null;
    return out;
  };
  const chunks: ChatCompletionChunk[] = [];
  const choices = completion.choices.map((choice, i) => choiceParts(choice, i)).sort((a, b) =>
    a.index - b.index
  );
  for (const parts of choices) {
    const at = (delta: JsonObject, finish: string | null = null): ChatCompletionChunk =>
      chunk([{ index: parts.index, delta, logprobs: null, finish_reason: finish }]);
    chunks.push(at({ role: parts.role, content: "" }));
    for (const piece of splitText(parts.reasoning)) chunks.push(at({ reasoning_content: piece }));
    for (const piece of splitText(parts.content)) chunks.push(at({ content: piece }));
    for (const piece of splitText(parts.refusal)) chunks.push(at({ refusal: piece }));
    if (parts.annotations !== undefined) chunks.push(at({ annotations: structuredClone(parts.annotations) }));
    parts.calls.forEach((call, index) => {
      if (call.type === "custom") {
        const custom = { name: call.name, input: call.arguments };
        chunks.push(at({ tool_calls: [{ index, id: call.id, type: call.type, custom }] }));
        return;
      }
      const fn = { name: call.name, arguments: "" };
      chunks.push(at({ tool_calls: [{ index, id: call.id, type: call.type, function: fn }] }));
      for (const piece of splitText(call.arguments)) {
        chunks.push(at({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    if (parts.functionCall !== undefined) {
      chunks.push(at({ function_call: { name: parts.functionCall.name, arguments: "" } }));
      for (const piece of splitText(parts.functionCall.arguments)) {
        chunks.push(at({ function_call: { arguments: piece } }));
      }
    }
    const finish = at({}, parts.finish);
    if (parts.stopReason !== undefined) finish.choices[0].stop_reason = parts.stopReason;
    chunks.push(finish);
  }
  if (usage !== undefined) chunks.push({ ...chunk([]), usage: structuredClone(usage) });
  return chunks;
}
