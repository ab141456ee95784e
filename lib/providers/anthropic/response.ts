/**
 * Anthropic Messages answers → OpenAI shapes, as pure functions: the whole `message` → `chat.completion`,
 * `stop_reason` → `finish_reason`, `usage` → `CompletionUsage`, and Anthropic error bodies → the
 * `GatewayError` the client sees (through the shared {@linkcode upstreamHttpError}, so status mapping and
 * key scrubbing are the same as for every other provider).
 *
 * @module
 */
import {
  type AnthropicErrorDetails,
  badGateway,
  CONTEXT_LENGTH_EXCEEDED,
  GatewayError,
} from "../../errors.ts";
import { ANTHROPIC_TOO_LONG } from "../../anthropic_errors.ts";
import { makeUsage, newCompletionId } from "../shared/chunks.ts";
import type { ChatCompletion, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";
import { isObject } from "../../openai/types.ts";
import { readCounts } from "../../openai/usage_counts.ts";
import {
  isErrorBody,
  MAX_UPSTREAM_MESSAGE,
  type ParsedUpstreamError,
  scrubbedClip,
  upstreamHttpError,
} from "../shared/upstream_error.ts";
import { parseScrubbed } from "../../secrets/scrub_json.ts";
import { scrubberOf } from "../../secrets/scrubber.ts";
import { isJsonAnswer } from "../shared/json_answer_tool.ts";
import { anthropicFinishReason } from "../finish_reasons.ts";

/** Anthropic `stop_reason` → OpenAI `finish_reason` (the one table, lib/providers/finish_reasons.ts). */
export const toFinishReason = anthropicFinishReason;

/**
 * {@linkcode toFinishReason} for a message in which `onlyAnswer` says whether the answer tool was called and no
 * tool of the client's: such a turn stopped for tool use but has answered, so it finishes with `stop`.
 */
export function answerFinishReason(stopReason: unknown, onlyAnswer: boolean): string {
  return stopReason === "tool_use" && onlyAnswer ? "stop" : toFinishReason(stopReason);
}

/** Token counts as Anthropic reports them; the fields the stream accumulates. */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** Of the cache writes, those kept an hour (`cache_creation.ephemeral_1h_input_tokens`); the rest are 5-minute. */
  cache_creation_1h: number;
}

/**
 * Reads Anthropic's usage object; absent (or null) cache fields count as 0. Undefined when there is no usage, it
 * lacks the input or output count, or any count in it is not a count ({@linkcode readCounts}, the rule every
 * vendor's usage is read by): such an answer is neither free nor priced at what its counts claim, so the caller
 * reports no usage and the gateway counts the tokens itself (marked estimated), as for an OpenAI-compatible
 * upstream.
 */
export function readAnthropicUsage(usage: unknown): AnthropicUsage | undefined {
  if (!isObject(usage)) return undefined;
  const split = isObject(usage.cache_creation) ? usage.cache_creation.ephemeral_1h_input_tokens : undefined;
  return readCounts((count) => ({
    input_tokens: count(usage.input_tokens),
    output_tokens: count(usage.output_tokens),
    cache_creation_input_tokens: count(usage.cache_creation_input_tokens, 0),
    cache_read_input_tokens: count(usage.cache_read_input_tokens, 0),
    cache_creation_1h: count(split, 0),
  }));
}

/**
 * OpenAI usage from Anthropic's: Anthropic's `input_tokens` excludes cached tokens, OpenAI's `prompt_tokens`
 * includes them, so prompt = input + cache writes + cache reads, and `cached_tokens` = cache reads.
 */
export function toOpenAIUsage(usage: AnthropicUsage): Usage {
  const prompt = usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens;
  const oneHour = Math.min(usage.cache_creation_1h, usage.cache_creation_input_tokens);
  return makeUsage(prompt, usage.output_tokens, usage.cache_read_input_tokens, {
    fiveMinutes: usage.cache_creation_input_tokens - oneHour,
    oneHour,
  });
}

/** Identity of the OpenAI completion built from an Anthropic message. */
export function completionId(messageId: unknown): string {
  return typeof messageId === "string" && messageId !== "" ? `chatcmpl-${messageId}` : newCompletionId();
}

/**
 * An Anthropic `message` as an OpenAI `chat.completion`: text blocks joined into `content` (null when there
 * are none), `tool_use` blocks as `tool_calls` with the input serialised to a JSON string, thinking blocks
 * joined into `reasoning_content` (the chat form's reasoning; present only when there was thinking). Redacted
 * thinking (encrypted), thinking signatures and server-tool blocks have no OpenAI counterpart and are left out.
 * Anthropic counts thinking inside `output_tokens` without a separate figure, so no `reasoning_tokens` is
 * reported, and no usage at all when the message has no usable counts (see {@linkcode readAnthropicUsage}). A
 * call of the reserved answer tool (a `response_format` served by a forced tool, see
 * `../shared/json_answer_tool.ts`) is the answer itself: its input is read as text, and a message that called
 * no other tool finishes with `stop`. Throws 502 for a body that is not a message.
 */
export function toChatCompletion(
  provider: string,
  message: unknown,
  model: string,
  created: number,
): ChatCompletion {
  if (!isObject(message) || !Array.isArray(message.content)) {
    throw badGateway(
      `Provider "${provider}" returned a body that is not a message.`,
      "upstream_invalid_response",
    );
  }
  let text: string | null = null;
  let thinking: string | undefined;
  const toolCalls: JsonObject[] = [];
  let answered = false;
  for (const block of message.content) {
    if (!isObject(block)) continue;
    if (block.type === "text" && typeof block.text === "string") text = (text ?? "") + block.text;
    else if (block.type === "thinking" && typeof block.thinking === "string") {
      thinking = (thinking ?? "") + block.thinking;
    } else if (block.type === "tool_use" && isJsonAnswer(block.name)) {
      text = (text ?? "") + JSON.stringify(block.input ?? {});
      answered = true;
    } else if (block.type === "tool_use") {
      toolCalls.push({
        id: String(block.id),
        type: "function",
        function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  const reply: JsonObject & ReasoningFields = { role: "assistant", content: text, refusal: null };
  if (thinking !== undefined) reply.reasoning_content = thinking;
  if (toolCalls.length > 0) reply.tool_calls = toolCalls;
  const completion: ChatCompletion = {
    id: completionId(message.id),
    object: "chat.completion",
    created,
    model,
    choices: [{
      index: 0,
      message: reply,
      logprobs: null,
      finish_reason: answerFinishReason(message.stop_reason, answered && toolCalls.length === 0),
    }],
  };
  const usage = readAnthropicUsage(message.usage);
  if (usage !== undefined) completion.usage = toOpenAIUsage(usage);
  return completion;
}

/** The HTTP status Anthropic documents for each error type; used for errors that arrive inside a stream. */
const STATUS_OF_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** Error types OpenAI also uses, kept as `type`; others become `code` so the client still learns them. */
const OPENAI_TYPES = new Set([
  "invalid_request_error",
  "authentication_error",
  "permission_error",
  "not_found_error",
  "rate_limit_error",
]);

/**
 * Message and type from an Anthropic error body `{"type":"error","error":{"type","message"}}`. A prompt over
 * the context window ({@linkcode ANTHROPIC_TOO_LONG}) gets OpenAI's code and `param` for it.
 */
export function parseAnthropicError(body: unknown, status: number): ParsedUpstreamError {
  let json = body;
  if (typeof body === "string") {
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
  }
  const inner = isObject(json) && isObject(json.error) ? json.error : {};
  const type = typeof inner.type === "string" && inner.type !== "" ? inner.type : null;
  const message = typeof inner.message === "string" && inner.message !== "" ? inner.message : null;
  const known = type !== null && OPENAI_TYPES.has(type);
  if (
    status === 400 && type === "invalid_request_error" && message !== null && ANTHROPIC_TOO_LONG.test(message)
  ) {
    return { message, type, code: CONTEXT_LENGTH_EXCEEDED, param: "messages" };
  }
  return {
    message,
    type: known ? type : null,
    code: !known && type !== null && status < 500 ? type : null,
    param: null,
  };
}

/**
 * The client-facing error for an Anthropic non-2xx answer: 401/403 reworded (the key never leaks), other 4xx
 * passed on (429 with `retry-after`), 529 → 503 `upstream_overloaded`, other 5xx → 502. All but 401/403 keep
 * the upstream's Anthropic error type and `details` for a client of the Messages API.
 */
export function anthropicHttpError(
  provider: string,
  status: number,
  body: string,
  headers: Headers,
  secrets: readonly string[],
): GatewayError {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  const error = upstreamHttpError(provider, status, parseAnthropicError(json, status), headers, secrets);
  // The gateway's own credentials were refused: the client's error is the gateway's, not the upstream's type
  // nor its details (which would be about the gateway's key).
  if (status === 401 || status === 403) return error;
  return withAnthropicType(error, anthropicErrorType(json), anthropicErrorDetails(json, secrets));
}

/**
 * The `error.details` of an Anthropic error body (`{"error_code":"image_dimensions_too_large","max_dimension":…}`),
 * from whose `error_code` Anthropic's SDKs pick the error's class (`ImageDimensionsTooLargeError` for
 * `400 image_dimensions_too_large`) and which they expose as `details`; null when there is none. Bounded as
 * every upstream text is: details whose JSON is over {@linkcode MAX_UPSTREAM_MESSAGE} characters keep only
 * their `error_code`, itself cut (a cut JSON text would be no object); then every string and key of what is kept
 * is scrubbed of `secrets`, as the message is (cut first, then scrubbed: the scrub's cost stays bounded).
 */
export function anthropicErrorDetails(
  body: unknown,
  secrets: readonly string[],
): AnthropicErrorDetails | null {
  const details = isObject(body) && isObject(body.error) ? body.error.details : undefined;
  if (!isObject(details)) return null;
  const text = JSON.stringify(details);
  if (text.length <= MAX_UPSTREAM_MESSAGE) {
    const scrubber = scrubberOf(secrets);
    return parseScrubbed(text, (value) => scrubber.scrub(value)) as AnthropicErrorDetails;
  }
  const code = typeof details.error_code === "string" ? scrubbedClip(details.error_code, secrets) : null;
  return code === null ? null : { error_code: code };
}

/** The documented Anthropic error type in an error body (text or parsed), or null for anything else. */
export function anthropicErrorType(body: unknown): string | null {
  let json = body;
  if (typeof body === "string") {
    try {
      json = JSON.parse(body);
    } catch {
      return null;
    }
  }
  const type = isObject(json) && isObject(json.error) ? json.error.type : undefined;
  return typeof type === "string" && Object.hasOwn(STATUS_OF_TYPE, type) ? type : null;
}

/**
 * `error` carrying Anthropic's own error `type` and `details`, for a client of the Messages API (which gets the
 * upstream's `overloaded_error`, not a type guessed from the gateway's status, and the `error_code` its SDK
 * types the error by); `error` itself when there is neither.
 */
export function withAnthropicType(
  error: GatewayError,
  type: string | null,
  details: AnthropicErrorDetails | null = null,
): GatewayError {
  if (type === null && details === null) return error;
  return new GatewayError(error.status, error.message, {
    type: error.type,
    code: error.code,
    param: error.param,
    headers: error.headers,
    anthropicType: type,
    anthropicDetails: details,
  });
}

/**
 * The error for an `event: error` that arrives after HTTP 200: mapped as if Anthropic had answered with the
 * status its docs give the error type (`overloaded_error` → 529 → 503 `upstream_overloaded`), 502 if unknown.
 */
export function anthropicStreamError(
  provider: string,
  data: unknown,
  secrets: readonly string[],
): GatewayError {
  const inner = isObject(data) && isObject(data.error) ? data.error : {};
  const status = STATUS_OF_TYPE[typeof inner.type === "string" ? inner.type : ""] ?? 500;
  const error = upstreamHttpError(
    provider,
    status,
    parseAnthropicError(data, status),
    new Headers(),
    secrets,
  );
  return withAnthropicType(error, anthropicErrorType(data), anthropicErrorDetails(data, secrets));
}

/**
 * Throws the upstream's error when a 200's JSON `body` is Anthropic's error body (`{"type": "error", "error":
 * {"type", "message"}}`) in place of a Message ({@linkcode isErrorBody}: no `content`, not `type: "message"`), as a
 * proxy in Anthropic's format may answer. It is mapped as the same `error` event inside a stream is
 * ({@linkcode anthropicStreamError}, `secrets` scrubbed): a `rate_limit_error` is the client's 429 with Anthropic's
 * type, retried and fallen back from as the HTTP one.
 */
export function throwAnthropicErrorBody(provider: string, body: unknown, secrets: readonly string[]): void {
  if (!isObject(body)) return;
  if (isErrorBody(body, body.type === "message" || body.content !== undefined)) {
    throw anthropicStreamError(provider, body, secrets);
  }
}
