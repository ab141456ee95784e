/**
 * The `builtin` provider: models that need no key and no network, so the gateway can be tried, tested and
 * health-checked end to end on a laptop or in CI. `echo` (chat) answers with the last user message in real
 * OpenAI shapes, streaming included; `hash` (embedding) gives deterministic feature-hashed vectors whose
 * cosine similarity tracks shared words and spelling.
 *
 * @module
 */
import { GatewayError, invalidRequest, printable } from "../../errors.ts";
import { randomHex } from "../../encoding/random_hex.ts";
import type { ChatResult, EmbeddingResult, Provider, UpstreamCall } from "../types.ts";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatMessage,
  ChatRequest,
  EmbeddingRequest,
  JsonObject,
  Usage,
} from "../../openai/types.ts";
import { isObject } from "../../openai/types.ts";

/** Words (letters, digits, `_`) and single punctuation marks: the builtin models' notion of a token. */
const TOKEN_PATTERN = /[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu;
const WORD_PATTERN = /^[\p{L}\p{N}_]/u;

/**
 * Counts tokens the way the builtin models do: each word and each punctuation mark is one token. Crude, but
 * deterministic and cheap, so usage numbers are stable across runs and runtimes.
 */
export function countTokens(text: string): number {
  let count = 0;
  for (const _ of text.matchAll(TOKEN_PATTERN)) count++;
  return count;
}

/** Default length of `hash` vectors when the request gives no `dimensions`. */
export const DEFAULT_HASH_DIMENSIONS = 256;
/** Upper bound for `dimensions`, so a request cannot make the gateway allocate huge vectors. */
export const MAX_HASH_DIMENSIONS = 4096;

/** Creates the builtin provider. It keeps no state, so one instance can serve every request. */
export function createBuiltinProvider(): Provider {
  return {
    chat(request, call) {
      return Promise.resolve().then(() => echoChat(request, call));
    },
    embed(request, call) {
      return Promise.resolve().then(() => hashEmbed(request, call));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// echo

function echoChat(request: ChatRequest, call: UpstreamCall): ChatResult {
  if (call.target.model !== "echo") throw unknownModel(call.target.model);
  if (request.n !== undefined && request.n !== null && request.n !== 1) {
    throw invalidRequest("The builtin echo model supports only n=1.", "n");
  }
  const limit = completionLimit(request);
  const full = lastUserText(request.messages);
  const { text, finishReason } = truncate(full, limit);
  const promptTokens = request.messages.reduce((sum, m) => sum + messageTexts(m).reduce(addTokens, 0), 0);
  const usage = makeUsage(promptTokens, countTokens(text));
  const id = `chatcmpl-${randomHex(12)}`;
  const created = Math.floor(Date.now() / 1000);
  const model = call.target.model;

  if (request.stream !== true) {
    const body: ChatCompletion = {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [{
        index: 0,
        message: { role: "assistant", content: text, refusal: null, annotations: [] },
        logprobs: null,
        finish_reason: finishReason,
      }],
      usage,
      service_tier: "default",
    };
    return { kind: "json", body };
  }

  const chunk = (choices: JsonObject[], chunkUsage: Usage | null): ChatCompletionChunk => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    service_tier: "default",
    choices,
    usage: chunkUsage,
  });
  const delta = (d: JsonObject, finish: string | null = null): JsonObject => ({
    index: 0,
    delta: d,
    logprobs: null,
    finish_reason: finish,
  });
  const pieces = splitPieces(text);
  // Step 0 is the role chunk, steps 1..pieces.length the content, then the finish chunk, then usage.
  let step = 0;
  // highWaterMark 0: a chunk is made only when the consumer asks for one, and cancel() simply stops asking.
  const stream = new ReadableStream<ChatCompletionChunk>({
    pull(controller) {
      if (call.signal.aborted) {
        controller.error(call.signal.reason);
        return;
      }
      if (step === 0) {
        controller.enqueue(chunk([delta({ role: "assistant", content: "", refusal: null })], null));
      } else if (step <= pieces.length) {
        controller.enqueue(chunk([delta({ content: pieces[step - 1] })], null));
      } else if (step === pieces.length + 1) {
        controller.enqueue(chunk([delta({}, finishReason)], null));
      } else {
        controller.enqueue(chunk([], usage));
        controller.close();
      }
      step++;
    },
  }, { highWaterMark: 0 });
  return { kind: "stream", chunks: stream.getReader() };
}

function unknownModel(model: string): GatewayError {
  return new GatewayError(404, `The builtin provider has no model \`${printable(model)}\`.`, {
    type: "invalid_request_error",
    code: "model_not_found",
    param: "model",
  });
}

/** The smaller of `max_tokens` and `max_completion_tokens`, or `Infinity` when neither is given. */
function completionLimit(request: ChatRequest): number {
  let limit = Infinity;
  for (const param of ["max_tokens", "max_completion_tokens"]) {
    const value = request[param];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || !Number.isInteger(value)) {
      throw invalidRequest(`Invalid type for '${param}': expected an integer.`, param, "invalid_type");
    }
    if (value < 1) {
      throw invalidRequest(
        `Invalid '${param}': integer below minimum value. Expected a value >= 1, but got ${value} instead.`,
        param,
        "integer_below_min_value",
      );
    }
    limit = Math.min(limit, value);
  }
  return limit;
}

/**
 * Cuts `text` right after its `limit`-th token. Tokens are maximal runs, so the prefix has exactly `limit`
 * tokens; "length" is reported only when something was actually cut.
 */
function truncate(text: string, limit: number): { text: string; finishReason: "stop" | "length" } {
  if (limit === Infinity) return { text, finishReason: "stop" };
  let seen = 0;
  for (const m of text.matchAll(TOKEN_PATTERN)) {
    if (++seen === limit) {
      const end = m.index + m[0].length;
      // Any non-space character is (part of) a token, so this asks "was anything cut off?".
      if (!/\S/.test(text.slice(end))) break;
      return { text: text.slice(0, end), finishReason: "length" };
    }
  }
  return { text, finishReason: "stop" };
}

/**
 * Splits the answer into stream deltas, one per token with the whitespace before it; whitespace after the
 * last token joins the last delta. Concatenating the pieces gives back the answer exactly.
 */
function splitPieces(text: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  for (const m of text.matchAll(TOKEN_PATTERN)) {
    const end = m.index + m[0].length;
    pieces.push(text.slice(start, end));
    start = end;
  }
  if (start < text.length) {
    if (pieces.length === 0) pieces.push(text.slice(start));
    else pieces[pieces.length - 1] += text.slice(start);
  }
  return pieces;
}

/** The text of the last `user` message: its string content, or its text parts joined with "\n". */
function lastUserText(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user") return contentTexts(messages[i].content).join("\n");
  }
  return "";
}

function contentTexts(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  const texts: string[] = [];
  for (const part of content) {
    if (isObject(part) && part.type === "text" && typeof part.text === "string") texts.push(part.text);
  }
  return texts;
}

/** Everything in a message that counts as prompt: content text and tool-call (or function-call) arguments. */
function messageTexts(message: ChatMessage): string[] {
  const texts = contentTexts(message.content);
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (isObject(call) && isObject(call.function) && typeof call.function.arguments === "string") {
        texts.push(call.function.arguments);
      }
    }
  }
  if (isObject(message.function_call) && typeof message.function_call.arguments === "string") {
    texts.push(message.function_call.arguments);
  }
  return texts;
}

function addTokens(sum: number, text: string): number {
  return sum + countTokens(text);
}

function makeUsage(promptTokens: number, completionTokens: number): Usage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// hash

/**
 * Why the builtin model `model` cannot embed `request`, or null when it can (only `hash` embeds, in 1 to
 * {@linkcode MAX_HASH_DIMENSIONS} dimensions). Asked before routing too (`embeddingParamsOn`).
 */
export function builtinEmbeddingRefusal(model: string, request: EmbeddingRequest): GatewayError | null {
  if (model !== "hash") return unknownModel(model);
  const dimensions = request.dimensions ?? DEFAULT_HASH_DIMENSIONS;
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > MAX_HASH_DIMENSIONS) {
    return invalidRequest(
      `Invalid 'dimensions': the builtin hash model supports 1 to ${MAX_HASH_DIMENSIONS} dimensions.`,
      "dimensions",
    );
  }
  return null;
}

function hashEmbed(request: EmbeddingRequest, call: UpstreamCall): EmbeddingResult {
  const refusal = builtinEmbeddingRefusal(call.target.model, request);
  if (refusal !== null) throw refusal;
  const dimensions = request.dimensions ?? DEFAULT_HASH_DIMENSIONS;
  let promptTokens = 0;
  const data = normalizeInputs(request.input).map((input, index) => {
    if (typeof input === "string") {
      promptTokens += countTokens(input);
      return { index, embedding: hashEmbedding(input, dimensions) };
    }
    promptTokens += input.length;
    return { index, embedding: vectorOf(input.map((id) => `#${id}`), dimensions) };
  });
  return { data, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
}

/** `string | string[] | number[] | number[][]` as a list of inputs: texts or token-id lists. */
function normalizeInputs(input: EmbeddingRequest["input"]): (string | number[])[] {
  if (typeof input === "string") return [input];
  if (input.length > 0 && typeof input[0] === "number") return [input as number[]];
  return input as (string | number[])[];
}

/**
 * Embeds text by signed feature hashing: the features are the lower-cased tokens (see
 * {@linkcode countTokens}) plus the character trigrams of each word padded with `<` and `>` ("cat" gives
 * `<ca`, `cat`, `at>`), so texts that share words or spellings point the same way. Each feature is hashed with
 * 32-bit FNV-1a over its UTF-8 bytes: the hash modulo `dimensions` picks the bucket and its top bit the sign,
 * so unrelated collisions tend to cancel. The vector is then scaled to unit length. A text without tokens
 * (only whitespace) has no direction and gets the all-zero vector rather than NaNs.
 */
export function hashEmbedding(text: string, dimensions: number): number[] {
  const features: string[] = [];
  for (const [token] of text.toLowerCase().matchAll(TOKEN_PATTERN)) {
    features.push(`w:${token}`);
    if (!WORD_PATTERN.test(token)) continue;
    const chars = Array.from(`<${token}>`);
    for (let i = 0; i + 3 <= chars.length; i++) features.push(`g:${chars[i]}${chars[i + 1]}${chars[i + 2]}`);
  }
  return vectorOf(features, dimensions);
}

const encoder = new TextEncoder();

/** Hashes `features` into a signed, L2-normalized vector (all zeros when there are no features). */
function vectorOf(features: readonly string[], dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const feature of features) {
    const h = fnv1a32(encoder.encode(feature));
    vector[h % dimensions] += h & 0x80000000 ? -1 : 1;
  }
  let norm = 0;
  for (const x of vector) norm += x * x;
  if (norm === 0) return vector;
  const scale = 1 / Math.sqrt(norm);
  return vector.map((x) => x * scale);
}

/** 32-bit FNV-1a, as an unsigned integer. */
function fnv1a32(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193);
  return h >>> 0;
}
