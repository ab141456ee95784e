/**
 * Relays a server-sent event stream as messages: each event's `data` becomes one message (a WebSocket text
 * frame), in order. This is how an answer the gateway streams over SSE is given to a WebSocket client without
 * a second stream implementation: the events are the same, only the framing differs. Comments (keep-alives)
 * and `[DONE]` markers are SSE framing too and are not relayed.
 *
 * @module
 */
import { sseParseTransformer } from "../sse/parse.ts";
import { pullThrough } from "../streams/pull_through.ts";

/**
 * Sends the `data` of every event of `body` through `send`, which resolves when the client can take more.
 * Stops, cancelling `body` (which ends the request and its upstream call), when `signal` aborts; resolves once
 * the stream is over either way: `true` when every event was sent, `false` when `signal` stopped it first (the
 * body may have ended before its last events were sent: they wait here, not in the body); rejects when the
 * stream fails (the gateway's bodies tell their failures in events, so that is a broken stream, as it would be
 * over SSE).
 *
 * An event is relayed whatever its size: `body` is the gateway's own answer, whose events it has already
 * bounded (a translated stream by `upstream_limits.max_body_size` characters of output, a native one by
 * `upstream_limits.max_event_size` per upstream event) and writes whole, one chunk each, and sends uncapped
 * over SSE. A byte cap here only cut answers an SSE client gets whole: one of many CJK characters or escaped
 * quotes, whose final events carry the whole text at up to 6 bytes a character.
 */
export async function relaySse(
  body: ReadableStream<Uint8Array>,
  send: (text: string) => Promise<void>,
  signal: AbortSignal,
): Promise<boolean> {
  const parse = sseParseTransformer({ maxEventBytes: Number.POSITIVE_INFINITY });
  const reader = pullThrough(body, parse).getReader();
  const cancel = () => void reader.cancel(signal.reason).catch(() => {});
  if (signal.aborted) {
    cancel();
    return false;
  }
  signal.addEventListener("abort", cancel, { once: true });
  try {
    while (true) {
      const { done, value } = await reader.read();
      // An abort during the last `send` ends the relay here too: that event's delivery was cut short.
      if (signal.aborted) return false;
      if (done) return true;
      if (value.data === "[DONE]") continue;
      await send(value.data);
    }
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}
