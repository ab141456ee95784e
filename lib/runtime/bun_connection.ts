/**
 * How Bun's edge ends an answer on its connection: the idle timer's phases (Bun has one timer for a
 * connection's whole life), the keep-alive timer restored once a body is written, a stream whose client stops
 * taking it cut, and the `Connection: close` Bun does not say on its own.
 *
 * @module
 */
import { type ConnectionLimits, isStreamedAnswer } from "./types.ts";

/** Bun's idle timer counts whole seconds, 1 to 255. */
function seconds(ms: number): number {
  return Math.min(255, Math.max(1, Math.ceil(ms / 1_000)));
}

/**
 * Bun closes a connection after `idleTimeout` seconds without bytes on its socket, even while the handler is
 * still working, and it has no deadline for a whole body. So the edge uses that one timer in phases:
 *
 * - until a connection's first request head is complete (a silent new connection, a stalled or trickled head):
 *   not the edge's. Bun 1.4.5 closes such a connection, without an answer, about 10 s after it opened
 *   ({@linkcode BUN_HEAD_DEADLINE_MS}), whatever `idleTimeout` says and however many bytes trickle in, and
 *   `Bun.serve` surfaces neither the socket nor a partial head, so `header_timeout` cannot be applied there
 *   (`serve` warns at start when it differs). `head` is still given as `idleTimeout`, the timer Bun starts a
 *   request with, which the edge turns off at once.
 * - while a request is in progress: off (`server.timeout(request, 0)`). A non-stream completion can take
 *   minutes and a stream may be silent while the upstream thinks; both are bounded by the upstream timeouts.
 *   A stalled body is answered 408 after `body_timeout` by the body reader (lib/http/read_json_body.ts).
 * - once the answer is written: `keep_alive_timeout`, so idle keep-alive connections close (a later head that
 *   stalls on that connection is closed by this timer too).
 */
export interface IdlePhases {
  head: number;
  keepAlive: number;
}

/**
 * Bun's own deadline for a connection's first request head (uWebSockets' fixed HTTP idle timeout of 10 s),
 * which acts on Bun's 4-second tick: measured at about 12 s on Bun 1.4.5 for `idleTimeout` 1 to 60, a silent
 * connection and a head trickled a byte every 200 ms alike.
 */
export const BUN_HEAD_DEADLINE_MS = 10_000;

/** The idle timer settings, in Bun's whole seconds, for `limits`. */
export function idlePhases(limits: ConnectionLimits): IdlePhases {
  return { head: seconds(limits.headerTimeoutMs), keepAlive: seconds(limits.keepAliveTimeoutMs) };
}

/**
 * Restores the keep-alive idle timer when `response`'s body has been written. A finished body is written
 * as soon as it is returned, so its timer is set at once; a stream's (marked by the runner, or SSE) when its
 * last chunk has been read, while the request is still attached to its connection (Bun ignores the call once
 * the response is done). A stream whose client takes none of it for `sendTimeoutMs` (Bun reads the next chunk
 * only once the last one was written) is cancelled, which ends its request and upstream call, and failed,
 * which closes the connection.
 */
export function withKeepAliveTimer(response: Response, restore: () => void, sendTimeoutMs: number): Response {
  const type = response.headers.get("content-type");
  const streamed = isStreamedAnswer(response) || (type !== null && type.startsWith("text/event-stream"));
  // `body` last: on Bun, reading it makes a stream of a finished body, which then is sent through that stream.
  if (!streamed || response.body === null) {
    restore();
    return response;
  }
  const reader = response.body.getReader();
  let stalled: ReturnType<typeof setTimeout> | undefined;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      clearTimeout(stalled);
      const { done, value } = await reader.read();
      if (done) {
        restore();
        controller.close();
        return;
      }
      controller.enqueue(value);
      stalled = setTimeout(() => {
        const gone = new DOMException("The client took none of the answer in time.", "TimeoutError");
        reader.cancel(gone).catch(() => {});
        controller.error(gone);
      }, sendTimeoutMs);
    },
    cancel: (reason) => {
      clearTimeout(stalled);
      return reader.cancel(reason);
    },
  }, { highWaterMark: 0 });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * Whether an answer leaves part of the request's body unread on its connection, so that it must be the
 * connection's last: Bun would otherwise take the rest of an upload it was refused (a 413 on a declared 100 GB)
 * until the keep-alive timer, and the next request on the connection would start inside it. A body the handler
 * never began (a 401, or a 413 on its declared length) has `contentLength` (the request's `Content-Length`) or
 * chunked framing; one it refused part-way is answered 413 (too large) or 408 (stalled). Node's server does the
 * same on Deno (lib/runtime/node_http_edge.ts). A body the handler read, the common case, costs one check.
 */
export function leavesBodyUnread(request: Request, contentLength: string | null, status: number): boolean {
  if (status === 413 || status === 408) return true;
  if (request.bodyUsed) return false;
  return (contentLength !== null && contentLength !== "0") || request.headers.has("transfer-encoding");
}

/**
 * Whether the request came with repeated `Content-Length` headers (Bun joins them with commas; a single one
 * with a comma Bun's parser refuses itself). Node's parser refuses them on Deno, even when equal, and RFC 9112
 * §6.3 lets a server refuse them: refused on Bun too, so both answer the same.
 */
export function repeatsContentLength(contentLength: string | null): boolean {
  return contentLength !== null && contentLength.includes(",");
}

/** The request's `Connection` header names `close` (its list is case-insensitive, RFC 9110 §7.6.1). */
export function asksToClose(request: Request): boolean {
  const connection = request.headers.get("connection");
  return connection !== null &&
    connection.split(",").some((option) => option.trim().toLowerCase() === "close");
}

/**
 * `response` with `Connection: close`. Bun closes such a connection after the answer without saying so; RFC
 * 9112 §9.6 asks the server to say it, and a pooling client not told (hyper: Deno's fetch, Rust's reqwest) may
 * pool the connection and send its next request on it as it closes, which then fails unanswered.
 */
export function saidLast(response: Response): Response {
  try {
    response.headers.set("connection", "close");
    return response;
  } catch {
    // Immutable headers (a fetched Response): the same answer under headers of its own.
    const headers = new Headers(response.headers);
    headers.set("connection", "close");
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}
