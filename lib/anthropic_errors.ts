/**
 * The Messages API's error shape: a {@linkcode GatewayError} as Anthropic answers it (its `type` for the status,
 * its words for a prompt over the context window, the upstream's `details`), for every route that speaks it.
 * Beside errors.ts (OpenAI's shape) as google_errors.ts is (Google's).
 *
 * @module
 */
import {
  type AnthropicErrorDetails,
  CONTEXT_LENGTH_EXCEEDED,
  type GatewayError,
  jsonError,
} from "./errors.ts";

/**
 * Anthropic's words for a prompt over the context window ("prompt is too long: 208310 tokens > 200000 maximum";
 * "input length and `max_tokens` exceed context limit: 198981 + 21333 > 200000, …" for the two together), Claude
 * on Bedrock's too. Claude Code compacts the conversation on either text, whatever the error's type.
 */
export const ANTHROPIC_TOO_LONG = /prompt is too long|input length and `?max_tokens`? exceed context limit/i;

/** Prompt and limit in the other vendors' too-long messages (OpenAI's, Gemini's, Titan's): pattern, groups. */
const TOKEN_COUNTS: readonly [RegExp, number, number][] = [
  [/maximum context length is (\d+) tokens\b.*?\b(?:resulted in|requested|has) (\d+)/is, 2, 1],
  [/input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)/i, 1, 2],
  [/max input tokens: (\d+)\b.*?\binput token count: (\d+)/is, 2, 1],
];

/**
 * `err`'s message on the Messages API: a `context_length_exceeded` one not in Anthropic's words (an OpenAI,
 * Gemini or Bedrock target's) is put in them, `prompt is too long: N tokens > M maximum (<its message>)` when it
 * gives the counts, so that Claude Code, which knows a context overflow by that text alone, compacts.
 */
function anthropicMessage(err: GatewayError): string {
  if (err.code !== CONTEXT_LENGTH_EXCEEDED || ANTHROPIC_TOO_LONG.test(err.message)) return err.message;
  for (const [pattern, prompt, limit] of TOKEN_COUNTS) {
    const counts = pattern.exec(err.message);
    if (counts !== null) {
      return `prompt is too long: ${counts[prompt]} tokens > ${counts[limit]} maximum (${err.message})`;
    }
  }
  return `prompt is too long: ${err.message}`;
}

/** Anthropic's error `type` for each status its API documents; other statuses fall back by class. */
const ANTHROPIC_TYPES: Readonly<Record<number, string>> = {
  400: "invalid_request_error",
  401: "authentication_error",
  402: "billing_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  504: "timeout_error",
  529: "overloaded_error",
};

/**
 * The Anthropic error `type` of `err`: the upstream's own (`anthropicType`) when an Anthropic upstream gave one,
 * `overloaded_error` for an overloaded upstream of any vendor, else the type Anthropic documents for the status
 * (other 4xx → `invalid_request_error`, other 5xx → `api_error`).
 */
export function anthropicErrorType(err: GatewayError): string {
  if (err.anthropicType !== null) return err.anthropicType;
  if (err.type === "overloaded_error" || err.code === "upstream_overloaded") return "overloaded_error";
  return ANTHROPIC_TYPES[err.status] ?? (err.status >= 500 ? "api_error" : "invalid_request_error");
}

/** The body of an Anthropic error: `{"type":"error","error":{"type","message","details"?},"request_id"}`. */
export interface AnthropicErrorBody {
  type: "error";
  error: { type: string; message: string; details?: AnthropicErrorDetails };
  request_id?: string;
}

/** `err` in Anthropic's error shape (the Messages API's routes answer every error this way; see anthropicMessage). */
export function anthropicErrorBody(err: GatewayError, requestId?: string): AnthropicErrorBody {
  const body: AnthropicErrorBody = {
    type: "error",
    error: { type: anthropicErrorType(err), message: anthropicMessage(err) },
  };
  if (err.anthropicDetails !== null) body.error.details = err.anthropicDetails;
  if (requestId !== undefined) body.request_id = requestId;
  return body;
}

/**
 * Serialises `err` in Anthropic's shape with its status: the error boundary's answer on routes that speak the
 * Messages API. An overloaded upstream answers 529 there, Anthropic's status for it, whatever status it had.
 */
export function anthropicErrorResponse(err: GatewayError, requestId: string): Response {
  const body = anthropicErrorBody(err, requestId);
  const status = body.error.type === "overloaded_error" ? 529 : err.status;
  return jsonError(JSON.stringify(body), status, err.headers);
}
