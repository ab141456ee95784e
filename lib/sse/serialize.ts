/**
 * Server-sent events out: the bytes the gateway writes to clients on `stream: true`.
 *
 * OpenAI streams are only `data:` events (no `event:` or `id:` lines), one JSON object per event, ended by
 * `data: [DONE]`; these helpers write exactly that and nothing more.
 *
 * @module
 */

/** One encoder for the process: `TextEncoder` is stateless, so there is no reason to make one per event. */
const encoder = new TextEncoder();

const LINE_BREAK = /\r\n|\r|\n/;

/**
 * Encodes one `data:` event: `data: <text>\n\n`. Text that contains line breaks (never the case for
 * `JSON.stringify` output) becomes one `data:` line per line, so the event cannot be split or forged.
 */
export function encodeDataEvent(data: string): Uint8Array {
  if (!LINE_BREAK.test(data)) return encoder.encode(`data: ${data}\n\n`);
  return encoder.encode(`${data.split(LINE_BREAK).map((line) => `data: ${line}\n`).join("")}\n`);
}

/**
 * Encodes a value as a `data: <JSON>\n\n` event.
 *
 * @throws {TypeError} when the value has no JSON form (`undefined`, a function), and whatever
 * `JSON.stringify` throws (cycles, BigInt): a silent `data: undefined` would break every client.
 */
export function encodeJsonEvent(value: unknown): Uint8Array {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError(`Cannot encode ${typeof value} as an SSE JSON event.`);
  // JSON text without indentation has no line break (a string's CR and LF are escaped), so it is one `data:`
  // line as it is: no scan for line breaks, which every streamed chunk paid.
  return encoder.encode(`data: ${json}\n\n`);
}

/**
 * `data: [DONE]\n\n`, the event that ends an OpenAI stream. It is shared, so do not modify it, and copy it
 * (or use {@linkcode doneEvent}) before enqueuing it into a byte stream, which would transfer its buffer.
 */
export const DONE_EVENT: Uint8Array = encodeDataEvent("[DONE]");

/** A fresh copy of {@linkcode DONE_EVENT}, for consumers that take ownership of the buffers they get. */
export function doneEvent(): Uint8Array {
  return DONE_EVENT.slice();
}
