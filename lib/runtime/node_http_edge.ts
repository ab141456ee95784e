/**
 * Serves a web `(Request) => Promise<Response>` handler through `node:http` (Node's own HTTP server, which
 * Deno runs over its `node:net`), because `Deno.serve` can enforce none of the connection limits and often
 * never tells a handler that its client went away:
 *
 * - `Deno.serve` keeps a connection open forever while its head trickles in a line at a time, after half a body,
 *   and on keep-alive idle; it has no options for any of it. Node's server has `headersTimeout`,
 *   `requestTimeout` (head and body) and `keepAliveTimeout`, and its `'connection'` event lets this edge count
 *   and refuse connections.
 * - `Deno.serve` does not abort `request.signal` when a client that sent a body of a few hundred bytes or more
 *   disconnects before the response starts, so the upstream call ran on and was charged as a 200. Node's
 *   server sees the socket close in every case; this edge then aborts the Request's signal and cancels the
 *   response body, which aborts the upstream.
 *
 * The adapter is kept cheap (one `writeHead`, request bodies streamed without `Readable.toWeb`, finite
 * response bodies written with one `end`) and byte-faithful: SSE chunks are written the moment they arrive.
 *
 * @module
 */
import http from "node:http";
import { originOf } from "./request_origin.ts";
import { ClientGoneError } from "../errors.ts";
import type { Socket } from "node:net";
import { toRequest } from "./node_request.ts";
import { DotSegmentError } from "./dot_segments.ts";
import { isWebSocketUpgrade, serveWebSockets } from "./node_websocket.ts";
import {
  type ClientRequest,
  type ConnectionLimits,
  DEFAULT_CONNECTION_LIMITS,
  type EdgeHandler,
  isStreamedAnswer,
  type RunningServer,
  type ServeOptions,
} from "./types.ts";
import {
  answerAndClose,
  BAD_REQUEST,
  closeAnswered,
  CONNECT_ELSEWHERE,
  DOT_SEGMENT,
  EDGE_ENDS,
  EDGE_HEADERS,
  edgeResponse,
  HEADERS_TOO_LARGE,
  INVALID_REQUEST,
  LAST_RESORT,
  REQUEST_TIMEOUT,
  TOO_MANY_CONNECTIONS,
} from "./raw_answers.ts";

/**
 * Node checks head and request deadlines on a timer, not per socket; it fires every
 * `connectionsCheckingInterval` (30 s by default, far too coarse for a 10 s head deadline).
 */
export function checkingInterval(limits: ConnectionLimits): number {
  return Math.max(
    25,
    Math.min(1_000, Math.floor(Math.min(limits.headerTimeoutMs, limits.bodyTimeoutMs) / 4)),
  );
}

/** The reason a request's signal aborts with when its client goes away. */
const CLIENT_GONE = () => new DOMException("The client closed the connection.", "AbortError");

/** Statuses whose answers have no body, and so no `content-length` either. */
const BODILESS: ReadonlySet<number> = new Set([204, 205, 304]);

/** Does the handler's answer have a body of unknown length that must be sent as it is produced (a stream)? */
function isStreamed(response: Response): boolean {
  if (isStreamedAnswer(response)) return true;
  const type = response.headers.get("content-type");
  return type !== null && type.startsWith("text/event-stream");
}

/**
 * Resolves true once `res` can take more data or its connection is gone; false when the client took none of it
 * for `ms`.
 */
function drained(res: http.ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (drained: boolean) => () => {
      clearTimeout(timer);
      res.off("drain", onDrain);
      res.off("close", onDrain);
      resolve(drained);
    };
    const onDrain = done(true);
    const timer = setTimeout(done(false), ms);
    res.on("drain", onDrain);
    res.on("close", onDrain);
  });
}

/** Serves one request: builds the web Request, runs the handler, writes its Response. */
async function serveOne(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  handler: EdgeHandler,
  origin: string,
  aborter: AbortController,
  sendTimeoutMs: number,
): Promise<void> {
  res.once("close", () => {
    if (res.writableFinished) return;
    // The connection closed before the whole answer was written: the client is gone. Aborting the Request's
    // signal stops an upstream call still waiting for its answer; cancelling the body stops a stream.
    aborter.abort(CLIENT_GONE());
  });
  // Let Node's parser finish the packet the head came in: a small body is then complete (bufferedBody).
  await undefined;
  let request: ClientRequest;
  try {
    request = toRequest(req, origin, () => aborter.abort(CLIENT_GONE()));
  } catch (err) {
    // A request target that is no path or URL, a path with a dot segment, or a header value the Fetch API
    // refuses: the client's mistake.
    const body = err instanceof DotSegmentError ? DOT_SEGMENT : INVALID_REQUEST;
    res.shouldKeepAlive = false;
    res.writeHead(400, [
      ...Object.entries(EDGE_HEADERS).flat(),
      "content-length",
      String(new TextEncoder().encode(body).byteLength),
    ]);
    res.end(body);
    return;
  }
  let response: Response;
  try {
    response = await handler(request, { signal: aborter.signal });
  } catch {
    response = edgeResponse(500, LAST_RESORT);
  }
  if (aborter.signal.aborted) {
    await response.body?.cancel(aborter.signal.reason).catch(() => {});
    return;
  }
  // A body the handler did not read (a 413, say) is not drained for the next request on this connection, and
  // a 408 means the client is not sending it: either way, close the connection after the answer.
  if (!req.complete || response.status === 408) res.shouldKeepAlive = false;
  const headers: string[] = [];
  response.headers.forEach((value, name) => headers.push(name, value));
  if (!isStreamed(response)) {
    if (BODILESS.has(response.status)) {
      res.writeHead(response.status, headers);
      res.end();
      return;
    }
    // Every non-stream answer of the gateway is a finished JSON or text body: send it with its length. Read
    // whole (`bytes()`), never through `response.body`, which would wrap the finished text in a stream first.
    let bytes: Uint8Array;
    try {
      bytes = await response.bytes();
    } catch {
      res.destroy();
      return;
    }
    if (!response.headers.has("content-length")) headers.push("content-length", String(bytes.byteLength));
    res.writeHead(response.status, headers);
    res.end(bytes);
    return;
  }
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel(aborter.signal.reason).catch(() => {});
  aborter.signal.addEventListener("abort", cancel, { once: true });
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      if (res.destroyed) return;
      // A client that takes none of the answer for `sendTimeoutMs` is gone for this answer: closing the
      // connection aborts the request (the 'close' listener), which cancels the stream and its upstream call.
      if (!res.write(value) && !await drained(res, sendTimeoutMs)) {
        res.destroy();
        return;
      }
    }
  } catch {
    // The stream failed after its head was sent: end the connection abruptly so the client sees a broken
    // response rather than a complete one. On the next turn of the event loop, once what was written (the
    // head and the API's error events, corked until then) has reached the socket.
    setTimeout(() => res.destroy(), 0);
    return;
  }
  aborter.signal.removeEventListener("abort", cancel);
  res.end();
}

/** Serves `options.handler` with `node:http`; resolves once listening. */
export function serveNodeHttp(options: ServeOptions): Promise<RunningServer> {
  const limits = options.limits ?? DEFAULT_CONNECTION_LIMITS;
  const server = http.createServer({
    headersTimeout: limits.headerTimeoutMs,
    // Node's request deadline runs from the first byte of the head to the last byte of the body.
    requestTimeout: limits.headerTimeoutMs + limits.bodyTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: checkingInterval(limits),
    // SSE chunks are small and must leave at once.
    noDelay: true,
    // Answered by the handler like any other request rather than with Node's bare 400.
    requireHostHeader: false,
    // Only a WebSocket upgrade goes to the 'upgrade' event (node_websocket.ts); any other is a plain request.
    shouldUpgradeCallback: isWebSocketUpgrade,
  } as http.ServerOptions);
  // Never cut a silent socket on inactivity alone: a response in progress may be silent for minutes.
  server.timeout = 0;

  /** The connections within the cap; the refused ones linger apart. */
  const sockets = new Set<Socket>();
  let closing = false;
  const lingering = new Set<Socket>();
  // Node's own connection listener sets up the HTTP parser; it runs only for connections within the cap.
  const listeners = server.listeners("connection");
  if (listeners.length !== 1) throw new Error("node:http: expected exactly one connection listener");
  const setUp = listeners[0] as (socket: Socket) => void;
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    if (closing || sockets.size >= limits.maxConnections) {
      return answerAndClose(socket, TOO_MANY_CONNECTIONS, lingering);
    }
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    setUp.call(server, socket);
  });

  // Timeouts and malformed requests: Node would answer a bare 408/400; answer in OpenAI's error shape.
  const failed = new WeakSet<Socket>();
  const answering = new WeakMap<Socket, { res: http.ServerResponse; aborter: AbortController }>();
  server.on("clientError", (err: Error & { code?: string }, socket: Socket) => {
    if (failed.has(socket)) return;
    failed.add(socket);
    const request = answering.get(socket);
    if (err.code === "ECONNRESET" || !socket.writable || request?.res.headersSent) {
      socket.destroy();
      return;
    }
    const [payload, end] = err.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [REQUEST_TIMEOUT, EDGE_ENDS.requestTimeout]
      : err.code === "HPE_HEADER_OVERFLOW"
      ? [HEADERS_TOO_LARGE, EDGE_ENDS.headersTooLarge]
      : [BAD_REQUEST, EDGE_ENDS.malformed];
    answerAndClose(socket, payload, lingering);
    // A handler still waiting for this body must stop, and not answer into the raw response written above. Its
    // record says what the client got (the in-flight registry keeps a ClientGoneError's end), not a 499.
    request?.aborter.abort(new ClientGoneError(end));
  });

  const origin = originOf(options.hostname);
  const webSockets = serveWebSockets(
    server,
    options.handler,
    (req) => toRequest(req, origin),
  );
  let inFlight = 0;
  let idle: (() => void) | undefined;
  /**
   * How many bytes each connection had read when its last answer was done: one that has read more since holds
   * the start of its next request (a head still arriving), which shutdown must not cut.
   */
  const answeredBytes = new WeakMap<Socket, number>();
  const serveRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    inFlight++;
    const aborter = new AbortController();
    answering.set(req.socket, { res, aborter });
    // Once shutting down, every answer is the last on its connection.
    if (closing) res.shouldKeepAlive = false;
    res.once("close", () => {
      answering.delete(req.socket);
      answeredBytes.set(req.socket, req.socket.bytesRead);
      // A response that was already under way when shutdown began: close its connection gracefully (after its
      // last bytes are out) now that it is done.
      if (closing) req.socket.end();
      if (--inFlight === 0) idle?.();
    });
    void serveOne(req, res, options.handler, origin, aborter, limits.sendTimeoutMs);
  };
  server.on("request", serveRequest);
  // An `Expect` other than `100-continue`: Node would answer a bare 417 that no log or record sees. RFC 9110
  // §10.1.1 lets a server ignore an expectation it does not know, and Bun does: serve the request.
  server.on("checkExpectation", serveRequest);
  // CONNECT asks for a tunnel, and Node hands its socket over raw (with no listener, it closes it unanswered).
  // One to a path of the gateway's gets the server's answer, its 405 with the path's `Allow`, as on Bun; one to
  // another host (authority form) a 405 of the edge's own. Either way the connection closes after the answer.
  server.on("connect", (req: http.IncomingMessage, socket: Socket) => {
    if (!req.url?.startsWith("/")) return answerAndClose(socket, CONNECT_ELSEWHERE, lingering);
    const res = new http.ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    res.once("finish", () => closeAnswered(socket, lingering));
    serveRequest(req, res);
  });

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    const listening = () => {
      server.off("error", reject);
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : options.port;
      const hostname = typeof address === "object" && address !== null ? address.address : options.hostname;
      resolve({
        hostname,
        port,
        async shutdown(until: number | Promise<void>) {
          closing = true;
          const closed = new Promise<void>((r) => server.close(() => r()));
          for (const socket of lingering) socket.destroy();
          // Idle keep-alive connections close at once; `end`, not `destroy`, so an answer that has just been
          // written still reaches its client. A connection whose next head is arriving holds a request sent
          // before shutdown began: it is served like those in flight (its answer says `connection: close`), and
          // `header_timeout` and the grace period still bound it.
          for (const socket of sockets) {
            if (answering.has(socket) || webSockets.owns(socket)) continue;
            if (socket.bytesRead > (answeredBytes.get(socket) ?? 0)) continue;
            socket.end();
          }
          webSockets.shutdown();
          let timer: ReturnType<typeof setTimeout> | undefined;
          const deadline = typeof until === "number"
            ? new Promise<void>((r) => timer = setTimeout(r, until))
            : until;
          const drained = inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => idle = r);
          await Promise.race([drained.then(() => closed), deadline]);
          clearTimeout(timer);
          // Out of time, or done and waiting only for clients to close their side: close whatever is left.
          for (const socket of sockets) socket.destroy();
          await closed;
        },
      });
    };
    if (options.reusePort) {
      server.listen({ port: options.port, host: options.hostname, reusePort: true }, listening);
    } else server.listen(options.port, options.hostname, listening);
  });
}
