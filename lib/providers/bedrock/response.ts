/**
 * Bedrock answers → OpenAI: the Converse response body, stop reasons, token usage, and Bedrock's errors
 * (`{"message":…}` with the error name in `x-amzn-ErrorType`) mapped to the status an OpenAI client expects.
 *
 * @module
 */
import { badGateway, CONTEXT_LENGTH_EXCEEDED, GatewayError, gatewayTimeout } from "../../errors.ts";
import { ANTHROPIC_TOO_LONG } from "../../anthropic_errors.ts";
import { makeUsage, newCompletionId } from "../shared/chunks.ts";
import type { ChatCompletion, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";
import { readCounts } from "../../openai/usage_counts.ts";
import { isObject } from "../../openai/types.ts";
import { retryHeadersOf, scrubbedClip, unusableOutput, upstreamHttpError } from "../shared/upstream_error.ts";
import { isJsonAnswer } from "../shared/json_answer_tool.ts";
import { converseFinishReason } from "../finish_reasons.ts";

/** What the malformed stop reasons say the model produced: output nobody can use. */
const MALFORMED: Readonly<Record<string, string>> = {
  malformed_tool_use: "tool call",
  malformed_model_output: "answer",
};

/**
 * Converse `stopReason` → OpenAI `finish_reason` (the one table, lib/providers/finish_reasons.ts). The
 * malformed reasons throw the 502 Gemini's malformed function call does (`unusableOutput`): OpenAI has no
 * finish reason for them, and a "stop" with the broken output left out would read as the final answer.
 */
export function mapStopReason(provider: string, reason: unknown): string {
  if (typeof reason === "string" && Object.hasOwn(MALFORMED, reason)) {
    throw unusableOutput(provider, MALFORMED[reason], reason);
  }
  return converseFinishReason(reason);
}

/**
 * {@linkcode mapStopReason} for a turn in which `onlyAnswer` says whether the answer tool
 * (`../shared/json_answer_tool.ts`) was used and no tool of the client's: that turn has answered: `stop`.
 */
export function answerStopReason(provider: string, reason: unknown, onlyAnswer: boolean): string {
  return reason === "tool_use" && onlyAnswer ? "stop" : mapStopReason(provider, reason);
}

/**
 * Converse `TokenUsage` → OpenAI usage. Bedrock counts cache reads and writes apart from `inputTokens`;
 * OpenAI's `prompt_tokens` includes cached tokens, so both are added in and reads are reported as
 * `cached_tokens`. Writes are split by lifetime where `cacheDetails` gives it (`ttl` `1h` or `5m`), since a
 * 1-hour write is priced apart; what it does not account for is a 5-minute write, Claude's default. Undefined
 * without usage or its input or output count, or with any count that is not a count ({@linkcode readCounts}, the
 * rule for every vendor): such an answer is neither free nor priced at what its counts claim, and the gateway
 * counts its tokens itself (marked estimated), as for an OpenAI-compatible upstream.
 */
export function mapUsage(usage: unknown): Usage | undefined {
  if (!isObject(usage)) return undefined;
  const details = Array.isArray(usage.cacheDetails) ? usage.cacheDetails.filter(isObject) : [];
  const counts = readCounts((count) => ({
    input: count(usage.inputTokens),
    output: count(usage.outputTokens),
    cacheRead: count(usage.cacheReadInputTokens, undefined),
    writes: count(usage.cacheWriteInputTokens, 0),
    oneHour: details.reduce((sum, d) => sum + (d.ttl === "1h" ? count(d.inputTokens, 0) : 0), 0),
  }));
  if (counts === undefined) return undefined;
  const prompt = counts.input + (counts.cacheRead ?? 0) + counts.writes;
  const oneHour = Math.min(counts.oneHour, counts.writes);
  return makeUsage(prompt, counts.output, counts.cacheRead, {
    fiveMinutes: counts.writes - oneHour,
    oneHour,
  });
}

/**
 * Text, reasoning and tool calls of Converse content blocks: `reasoningContent.reasoningText.text` (Claude's
 * thinking, DeepSeek-R1's reasoning) becomes `reasoning_content`, apart from the answer; reasoning signatures,
 * redacted reasoning and other block kinds are not exposed. Converse does not count reasoning tokens apart from
 * `outputTokens`, so no `reasoning_tokens` is reported. A use of the reserved answer tool (a `response_format`
 * served by a forced tool) is the answer itself: its input is read as text.
 */
export function messageFromBlocks(content: unknown): JsonObject {
  const blocks = Array.isArray(content) ? content : [];
  let text = "";
  let sawText = false;
  let reasoning: string | undefined;
  const toolCalls: JsonObject[] = [];
  for (const block of blocks) {
    if (!isObject(block)) continue;
    if (typeof block.text === "string") {
      text += block.text;
      sawText = true;
    } else if (isObject(block.reasoningContent)) {
      const said = block.reasoningContent.reasoningText;
      if (isObject(said) && typeof said.text === "string") reasoning = (reasoning ?? "") + said.text;
    } else if (isObject(block.toolUse) && isJsonAnswer(block.toolUse.name)) {
      text += JSON.stringify(block.toolUse.input ?? {});
      sawText = true;
    } else if (isObject(block.toolUse)) {
      const use = block.toolUse;
      toolCalls.push({
        id: String(use.toolUseId),
        type: "function",
        function: { name: String(use.name), arguments: JSON.stringify(use.input ?? {}) },
      });
    }
  }
  const message: JsonObject & ReasoningFields = {
    role: "assistant",
    content: sawText ? text : null,
    refusal: null,
  };
  if (reasoning !== undefined) message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return message;
}

/** A Converse response body → `chat.completion`; a body without `output.message` is a 502. */
export function fromConverseResponse(provider: string, body: unknown, model: string): ChatCompletion {
  const message = isObject(body) && isObject(body.output) ? body.output.message : undefined;
  if (!isObject(body) || !isObject(message)) {
    throw badGateway(
      `Provider "${provider}" returned a Converse answer without output.message.`,
      "upstream_invalid_response",
    );
  }
  const reply = messageFromBlocks(message.content);
  const blocks = Array.isArray(message.content) ? message.content : [];
  const answered = blocks.some((b) => isObject(b) && isObject(b.toolUse) && isJsonAnswer(b.toolUse.name));
  const completion: ChatCompletion = {
    id: newCompletionId(),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{
      index: 0,
      message: reply,
      logprobs: null,
      finish_reason: answerStopReason(provider, body.stopReason, answered && reply.tool_calls === undefined),
    }],
  };
  const usage = mapUsage(body.usage);
  if (usage !== undefined) completion.usage = usage;
  return completion;
}

/** The error name Bedrock reports: `x-amzn-ErrorType` (before any `:`), else `__type`/`code` in the body. */
export function bedrockErrorType(headers: Headers, body: unknown): string | null {
  const header = headers.get("x-amzn-errortype");
  if (header) return header.split(":")[0].trim();
  if (isObject(body)) {
    const raw = body.__type ?? body.code;
    if (typeof raw === "string" && raw !== "") return raw.split("#").at(-1)!.split(":")[0];
  }
  return null;
}

const AUTH_ERRORS = new Set([
  "UnrecognizedClientException",
  "InvalidSignatureException",
  "IncompleteSignatureException",
  "MissingAuthenticationTokenException",
  "ExpiredTokenException",
  "InvalidClientTokenId",
  "SignatureDoesNotMatch",
]);

/** The errors in which AWS asks for the same request later: the client's 429, retried and fallen back from. */
const LATER_ERRORS = new Set([
  "ThrottlingException",
  "ModelNotReadyException",
  "ServiceQuotaExceededException",
]);

/**
 * The models' words for a prompt over the context window in a ValidationException (HTTP 400, or a
 * `validationException` frame in a stream), after "The model returned the following errors: ": beside Claude's
 * own ({@linkcode ANTHROPIC_TOO_LONG}), "Input is too long for requested model." (Claude on Converse), Titan's
 * "Too many input tokens. Max input tokens: …", Llama's and Mistral's "This model's maximum context length is N
 * tokens".
 */
const TOO_LONG =
  /input is too long for requested model|too many input tokens|maximum context length is \d+ tokens/i;

/** OpenAI's code and `param` for a ValidationException's `message`: `context_length_exceeded` if too long. */
function validationFields(message: string | null): { code: string | null; param: string | null } {
  const tooLong = message !== null && (ANTHROPIC_TOO_LONG.test(message) || TOO_LONG.test(message));
  return tooLong ? { code: CONTEXT_LENGTH_EXCEEDED, param: "messages" } : { code: null, param: null };
}

/**
 * `message` cut to a sane length, then the provider's credentials masked, whole and quoted in part: an error
 * body or exception frame may be megabytes, and only what is kept is scrubbed (`scrubClip`).
 */
function scrub(message: string | null, secrets: readonly string[]): string | null {
  return scrubbedClip(message, secrets);
}

/**
 * The client-facing error for a Bedrock HTTP error. Bad or unknown credentials and bad signatures (AWS answers
 * 403) become 401; AccessDenied stays 403; throttling, "model not ready" and a service quota exceeded are 429;
 * ServiceUnavailable is 503; validation 400 (a too-long prompt's with OpenAI's `context_length_exceeded`);
 * missing model 404; a model timeout 504; model errors (424) and other 5xx are 502. Secrets are scrubbed from
 * any upstream message that is kept.
 *
 * ServiceQuotaExceededException comes as HTTP 400, but AWS documents it as "You can resubmit your request
 * later": it is the account's limit, not the client's mistake, so it is retried and falls back like throttling
 * instead of ending the request as a client 400.
 */
export function bedrockHttpError(
  provider: string,
  status: number,
  headers: Headers,
  text: string,
  secrets: readonly string[],
): GatewayError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const type = bedrockErrorType(headers, body);
  const rawMessage = isObject(body) && typeof (body.message ?? body.Message) === "string"
    ? String(body.message ?? body.Message)
    : null;
  const message = scrub(rawMessage, secrets);
  const parsed = {
    message,
    type: null,
    ...validationFields(type === "ValidationException" ? message : null),
  };
  let mapped = status;
  if (type !== null && AUTH_ERRORS.has(type)) mapped = 401;
  else if (type === "AccessDeniedException") mapped = 403;
  else if (type !== null && LATER_ERRORS.has(type)) mapped = 429;
  else if (type === "ServiceUnavailableException") mapped = 503;
  else if (type === "ValidationException") mapped = 400;
  else if (type === "ResourceNotFoundException") mapped = 404;
  else if (type === "ModelTimeoutException" || status === 408) {
    return gatewayTimeout(`Provider "${provider}" model timed out${message ? `: ${message}` : "."}`);
  } else if (type === "ModelErrorException" || status === 424) mapped = 502;
  else if (status === 403) mapped = 401;
  if (mapped === 429) {
    return new GatewayError(429, message ?? `Provider "${provider}" is throttling requests.`, {
      type: "rate_limit_error",
      code: "rate_limit_exceeded",
      headers: retryHeaders(headers),
    });
  }
  if (mapped === 502 && status < 500) {
    return badGateway(`Provider "${provider}" model failed${message ? `: ${message}` : "."}`);
  }
  return upstreamHttpError(provider, mapped, parsed, headers, secrets);
}

function retryHeaders(headers: Headers): Record<string, string> {
  const { "retry-after": retryAfter } = retryHeadersOf(headers);
  return retryAfter === undefined ? {} : { "retry-after": retryAfter };
}

/**
 * The status a `modelStreamErrorException` says the model failed with (its payload's `originalStatusCode`, as
 * AWS documents it), when it is one mapped like the HTTP answer: 429, or an overload (503, Claude's 529).
 */
function originalStatus(payload: unknown): 429 | 503 | null {
  const code = isObject(payload) ? payload.originalStatusCode : undefined;
  if (code === 429) return 429;
  return code === 503 || code === 529 ? 503 : null;
}

/**
 * The error for an exception frame inside a ConverseStream or InvokeModelWithResponseStream (`:exception-type`
 * header, `{"message"}` payload): throttling (and a service quota exceeded, which ConverseStream does not list
 * but InvokeModel's HTTP errors do) 429, service unavailable 503, validation 400 (`context_length_exceeded` when
 * the prompt is too long), a model timeout 504, anything else (internal, model stream error …) 502. A model
 * stream error whose `originalStatusCode` (in `payload`) is a rate limit or an overload is mapped as that HTTP
 * answer is: Bedrock relays Claude's mid-stream overload so, and its client should back off, not see an API error.
 */
export function bedrockStreamException(
  provider: string,
  exceptionType: string,
  message: string | null,
  secrets: readonly string[],
  payload: unknown = undefined,
): GatewayError {
  const clean = scrub(message, secrets);
  const detail = clean ? `: ${clean}` : "";
  const named = scrub(exceptionType, secrets);
  const original = exceptionType === "modelStreamErrorException" ? originalStatus(payload) : null;
  // The model's own words when Bedrock relays them (Claude's "Overloaded"), else Bedrock's.
  const said =
    isObject(payload) && typeof payload.originalMessage === "string" && payload.originalMessage !== ""
      ? scrub(payload.originalMessage, secrets)
      : clean;
  const originalMessage = said ? `: ${said}` : ".";
  if (original === 429) {
    return new GatewayError(429, `Provider "${provider}" model rate-limited the stream${originalMessage}`, {
      type: "rate_limit_error",
      code: "rate_limit_exceeded",
    });
  }
  if (original === 503) {
    return new GatewayError(503, `Provider "${provider}" model is overloaded${originalMessage}`, {
      type: "server_error",
      code: "upstream_overloaded",
    });
  }
  switch (exceptionType) {
    case "modelTimeoutException":
      return gatewayTimeout(`Provider "${provider}" model timed out mid-stream${detail || "."}`);
    case "throttlingException":
    case "serviceQuotaExceededException":
      return new GatewayError(429, `Provider "${provider}" throttled the stream${detail}`, {
        type: "rate_limit_error",
        code: "rate_limit_exceeded",
      });
    case "serviceUnavailableException":
      return new GatewayError(503, `Provider "${provider}" is unavailable${detail}`, {
        type: "server_error",
        code: "upstream_overloaded",
      });
    case "validationException":
      return new GatewayError(400, clean ?? `Provider "${provider}" rejected the request mid-stream.`, {
        type: "invalid_request_error",
        ...validationFields(clean),
      });
    default:
      return badGateway(`Provider "${provider}" failed mid-stream (${named})${detail}`);
  }
}

/**
 * The error for an error frame inside a stream (`:message-type: error`, with `:error-code` and `:error-message`
 * headers): a 502 naming both, each cut and scrubbed as every upstream text is (a frame's header value can be
 * 64 KiB, and it may quote the provider's key).
 */
export function bedrockStreamError(
  provider: string,
  headers: Readonly<Record<string, unknown>>,
  secrets: readonly string[],
): GatewayError {
  const code = scrub(String(headers[":error-code"] ?? "error"), secrets);
  const text = typeof headers[":error-message"] === "string"
    ? scrub(headers[":error-message"], secrets)
    : null;
  return badGateway(`Provider "${provider}" reported a stream error (${code})${text ? `: ${text}` : "."}`);
}
