/**
 * What both Responses event streams share, the one translated from chat chunks (stream.ts) and the one passed
 * through from a native upstream (native_stream.ts): an event, its SSE frame, and the two events that end a
 * stream after a failure.
 *
 * @module
 */
import { badGateway, type GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";

/** One stream event: its `type` and fields; `sequence_number` is added when it is emitted. */
export type ResponseEvent = JsonObject & { type: string };

/**
 * The `ResponseErrorCode`s of OpenAI's spec, and `context_length_exceeded`, which OpenAI's `response.failed`
 * carries too (the spec does not list it; Codex reads it there as "context window exceeded" and compacts); any
 * other failure is a `server_error`.
 */
const ERROR_CODES = new Set([
  "server_error",
  "rate_limit_exceeded",
  "invalid_prompt",
  "context_length_exceeded",
]);

/** What a failed Response's `error.code` says of a failure whose error has `code`: one of the spec's, else `server_error`. */
export function failureCode(code: unknown): string {
  return typeof code === "string" && ERROR_CODES.has(code) ? code : "server_error";
}

/**
 * A stream's `error` event, in both of its forms at once: the spec's `ResponseErrorEvent` carries `code`,
 * `message` and `param` flat, while OpenAI's live API (and its WebSocket mode's `ResponseWsError`) nests them in
 * an `error` object whose `type` is the failure's class (openai-dotnet#881 shows the live form); SDKs read one
 * or the other (openai-python raises its APIError only on the nested one), so each finds what it reads.
 */
export function streamErrorEvent(code: unknown, message: unknown, param: unknown = null): ResponseEvent {
  const flat = { code: code ?? null, message, param: param ?? null };
  return { type: "error", error: { type: failureCode(code), ...flat }, ...flat };
}

/**
 * The two events that end a stream after a failure, without sequence numbers (the caller numbers them): an
 * `error` event with the gateway's error, then `response.failed` carrying the Response that `failedResponse`
 * builds around its `ResponseError` (`code` one of the spec's codes, else `server_error`). Shared by the
 * translated and the native stream.
 */
export function failureEvents(
  error: GatewayError,
  failedResponse: (error: JsonObject) => JsonObject,
): ResponseEvent[] {
  const body = error.toBody().error;
  const code = failureCode(body.code);
  return [
    streamErrorEvent(body.code, body.message, body.param),
    { type: "response.failed", response: failedResponse({ code, message: body.message }) },
  ];
}

/**
 * How a translated stream ends when the output it built passes `limit` characters (text, reasoning and
 * arguments): its final event carries that output whole, as a whole answer does, so it is held to a whole
 * answer's bound (`server.upstream_limits.max_body_size`). Without it an upstream streaming without end grew
 * the process until it died (300 MB of output killed a Deno gateway, every tenant's requests with it).
 */
export function outputTooLarge(limit: number): GatewayError {
  return badGateway(
    `The upstream's answer is larger than the gateway's limit of ${limit} bytes for a Response ` +
      "(server.upstream_limits.max_body_size).",
    "upstream_response_too_large",
  );
}

const encoder = new TextEncoder();

/** One SSE frame: `event: <type>` and `data: <json>` (JSON has no line breaks, so one `data:` line). */
export function encodeEvent(event: ResponseEvent): Uint8Array {
  return encoder.encode(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}
