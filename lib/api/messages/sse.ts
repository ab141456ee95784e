/**
 * Anthropic's SSE framing, shared by the translated and the native Messages streams: each frame is
 * `event: <type>` and one `data: <json>` line whose object carries the same `type`; there is no `[DONE]`
 * (`message_stop` ends a good stream, an `error` event a failed one).
 *
 * @module
 */
import type { GatewayError } from "../../errors.ts";
import { anthropicErrorBody } from "../../anthropic_errors.ts";
import type { JsonObject } from "../../openai/types.ts";

/** One Messages stream event: its `type` and fields. */
export type MessagesEvent = JsonObject & { type: string };

const encoder = new TextEncoder();

/**
 * One frame. The type goes on the `event:` line only when it is a plain name (a type taken from an upstream
 * could otherwise break the framing); JSON has no line breaks, so the data is one line.
 */
export function encodeMessagesEvent(event: MessagesEvent): Uint8Array {
  const name = /^[a-z_]{1,64}$/.test(event.type) ? event.type : "unknown";
  return encoder.encode(`event: ${name}\ndata: ${JSON.stringify(event)}\n\n`);
}

/** The `error` event that ends a stream after a failure: `{"type":"error","error":{"type","message"}}`. */
export function errorEvent(error: GatewayError): MessagesEvent {
  const { type, error: detail } = anthropicErrorBody(error);
  return { type, error: detail };
}

/** The keep-alive Anthropic sends during silences. */
export const PING: Readonly<MessagesEvent> = { type: "ping" };
