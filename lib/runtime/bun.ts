/**
 * The Bun runtime edge: `Bun.serve`, signals and file watching through `node:` modules, process exit. The
 * few Bun APIs used are declared here as local interfaces and reached through `globalThis`, so the code type
 * checks under Deno without `@types/bun` and without `any`.
 *
 * @module
 */
import { type FSWatcher, watch, writeSync } from "node:fs";
import process from "node:process";
import {
  asksToClose,
  BUN_HEAD_DEADLINE_MS,
  idlePhases,
  leavesBodyUnread,
  repeatsContentLength,
  saidLast,
  withKeepAliveTimer,
} from "./bun_connection.ts";
import { lingeringBody } from "./bun_linger.ts";
import { type DirectoryWatch, watchResolvedFile } from "./file_watch.ts";
import { DOT_SEGMENT, edgeResponse, NOT_A_HANDSHAKE, NOT_VALID_HTTP } from "./raw_answers.ts";
import { paramsHaveDotSegment, rawPathRoutes, resolvedFromOtherPath } from "./bun_dot_segments.ts";
import { originOf } from "./request_origin.ts";
import {
  DEFAULT_CONNECTION_LIMITS,
  MAX_WEBSOCKET_MESSAGE_BYTES,
  type RunningServer,
  type Runtime,
  type ServeOptions,
  webSocketOf,
  type WebSocketSession,
} from "./types.ts";

/** The part of Bun's `Server` this edge uses. */
export interface BunServer {
  readonly hostname: string | undefined;
  readonly port: number | undefined;
  /** Requests in progress (Bun has no count of open connections). */
  readonly pendingRequests: number;
  /** Overrides the idle timeout (seconds, 0 = off) of the connection `request` arrived on. */
  timeout(request: Request, seconds: number): void;
  /**
   * Stops listening. Without `closeActiveConnections`, idle keep-alive connections close at once and busy
   * ones when their response completes; the promise resolves once every connection is closed.
   */
  stop(closeActiveConnections?: boolean): Promise<void>;
  /** Answers `request` with `101 Switching Protocols`; false if it is not a valid WebSocket handshake. */
  upgrade(request: Request, options: { data: WebSocketSession; headers: Headers }): boolean;
}

/** The part of Bun's `ServerWebSocket` this edge uses. */
export interface BunWebSocket {
  readonly data: WebSocketSession;
  send(text: string): number;
  close(code: number, reason: string): void;
  getBufferedAmount(): number;
}

/** The part of `Bun.serve`'s `websocket` handlers this edge uses. */
export interface BunWebSocketHandlers {
  /** Bytes; a bigger message closes the connection with 1009. */
  maxPayloadLength: number;
  perMessageDeflate: false;
  open(ws: BunWebSocket): void;
  message(ws: BunWebSocket, message: string | Uint8Array): void;
  close(ws: BunWebSocket, code: number, reason: string): void;
}

/** A request a route matched has its raw segments (percent-decoded) as `params`. */
export type BunRequest = Request & { readonly params?: Readonly<Record<string, string>> };

/** A handler of `Bun.serve`: its `fetch`, or a route's. */
export type BunHandler = (
  request: BunRequest,
  server: BunServer,
) => Response | undefined | Promise<Response | undefined>;

/** The part of `Bun.serve`'s options this edge uses. */
export interface BunServeOptions {
  hostname: string;
  port: number;
  /** Seconds of socket silence before Bun closes a connection; 0 turns the timer off. */
  idleTimeout: number;
  /** The largest request body Bun lets through to the handler (128 MiB unless set). */
  maxRequestBodySize?: number;
  reusePort?: boolean;
  /** Handlers by route pattern, matched on the raw request target; `fetch` takes what none matches. */
  routes?: Record<string, BunHandler>;
  fetch: BunHandler;
  error(error: unknown): Response;
  websocket: BunWebSocketHandlers;
}

/** The part of the `Bun` global this edge uses. */
export interface BunGlobal {
  readonly version: string;
  serve(options: BunServeOptions): BunServer;
}

/** The `Bun` global, or undefined on another runtime. */
export function bunGlobal(): BunGlobal | undefined {
  return (globalThis as { Bun?: BunGlobal }).Bun;
}

function requireBun(): BunGlobal {
  const bun = bunGlobal();
  if (bun === undefined) throw new Error("lib/runtime/bun.ts needs the Bun runtime");
  return bun;
}

/**
 * Past the cap on requests in progress (Bun cannot count connections; idle ones are closed by the idle timer)
 * a request is refused at once, before any work, and its connection closed.
 */
const TOO_MANY_REQUESTS = JSON.stringify({
  error: {
    message: "The gateway has too many open connections; retry shortly.",
    type: "server_error",
    param: null,
    code: "too_many_connections",
  },
});

const LAST_RESORT = JSON.stringify({
  error: {
    message: "The gateway had an internal error.",
    type: "server_error",
    param: null,
    code: "internal_error",
  },
});

/** A timer as a promise that can be cancelled, so a finished shutdown does not wait out its deadline. */
function delay(ms: number): { promise: Promise<"timeout">; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), ms));
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * Graceful shutdown: stop accepting, let requests and streams in flight finish, and at `until` (milliseconds
 * from now, or once the promise resolves) close whatever is still open (a cancelled response stream aborts its
 * upstream request).
 */
export async function shutdownServer(server: BunServer, until: number | Promise<void>): Promise<void> {
  const deadline = typeof until === "number"
    ? delay(until)
    : { promise: until.then(() => "timeout" as const), cancel: () => {} };
  const drained = server.stop(false).then(() => "drained" as const);
  const outcome = await Promise.race([drained, deadline.promise]);
  deadline.cancel();
  if (outcome === "timeout") await server.stop(true);
}

/** UTF-8 bytes of a message, without encoding the common case (a string short enough at 3 bytes a unit). */
function overLimit(message: string | Uint8Array, max: number): boolean {
  if (typeof message !== "string") return message.byteLength > max;
  return message.length * 3 > max && encoder.encode(message).byteLength > max;
}

/** The reason Bun gives for a connection it closed over a message past `maxPayloadLength`. */
const BUN_TOO_BIG = "Received too big message";

/**
 * Bun's WebSocket handlers, which pass each connection's events to its session (the `data` given to
 * `server.upgrade`). Bun's own size limit is server-wide, so it is the edges' upper bound and each session's
 * own limit is applied here; Bun's pings keep an open connection alive, and the session closes an idle one.
 */
export function webSocketHandlers(sessions: Set<WebSocketSession>): BunWebSocketHandlers {
  return {
    maxPayloadLength: MAX_WEBSOCKET_MESSAGE_BYTES,
    perMessageDeflate: false,
    open(ws) {
      sessions.add(ws.data);
      ws.data.open({
        send: (text) => void ws.send(text),
        close: (code, reason) => ws.close(code, reason),
        get bufferedAmount() {
          return ws.getBufferedAmount();
        },
      });
    },
    message(ws, message) {
      if (overLimit(message, ws.data.maxMessageBytes)) return ws.close(1009, "Message too big.");
      ws.data.message(message);
    },
    close(ws, code, reason) {
      sessions.delete(ws.data);
      // A message past Bun's own cap: Bun closes with 1009 to the client but reports 1006 here, with this reason.
      ws.data.closed(code === 1006 && reason === BUN_TOO_BIG ? 1009 : code, reason);
    },
  };
}

/**
 * `request` with its URL under `origin`. Bun builds a request's URL from its Host header, and gives only the
 * path when that Host names no host (`h/v1/x?`, `a b`): the handlers read whole URLs.
 */
function underOrigin(request: Request, origin: string): Request {
  return new Request(origin + request.url, request);
}

/** `request` reading `body` instead of its own. */
function withBody(request: Request, body: ReadableStream<Uint8Array>): Request {
  const { method, headers, signal } = request;
  return new Request(request.url, { method, headers, signal, body, duplex: "half" } as RequestInit);
}

function serve(options: ServeOptions): Promise<RunningServer> {
  const limits = options.limits ?? DEFAULT_CONNECTION_LIMITS;
  const origin = originOf(options.hostname);
  const sessions = new Set<WebSocketSession>();
  const idle = idlePhases(limits);
  let closing = false;
  const fetch = async (request: BunRequest, server: BunServer, dotted: boolean) => {
    // The request being served counts itself.
    if (server.pendingRequests > limits.maxConnections) {
      return edgeResponse(503, TOO_MANY_REQUESTS, { "retry-after": "1", connection: "close" });
    }
    const contentLength = request.headers.get("content-length");
    if (repeatsContentLength(contentLength)) {
      return edgeResponse(400, NOT_VALID_HTTP, { connection: "close" });
    }
    // A raw path with a dot segment (lib/runtime/bun_dot_segments.ts): refused before it is served as another.
    if (dotted) return edgeResponse(400, DOT_SEGMENT);
    server.timeout(request, 0);
    const target = request.url.startsWith("/") ? underOrigin(request, origin) : request;
    // A chunked body (rare: clients send Content-Length) can be drained once answered (lib/runtime/bun_linger.ts).
    const chunked = contentLength === null && request.headers.has("transfer-encoding") ? target.body : null;
    const lingering = chunked === null ? undefined : lingeringBody(chunked);
    const served = lingering === undefined ? target : withBody(target, lingering.body);
    const response = await options.handler(served);
    // Only an answer made by acceptWebSocket (bodiless) has a session; `response.body` is not read to tell,
    // since reading it makes a stream of a finished body, which Bun then sends through that stream.
    const session = webSocketOf(response);
    if (session !== undefined) {
      if (server.upgrade(request, { data: session, headers: response.headers })) return undefined;
      return edgeResponse(400, NOT_A_HANDSHAKE);
    }
    // Once shutting down, when the request asked for it, and when the answer leaves part of the body unread,
    // the answer says it is its connection's last (Bun closes it after), as on node:http.
    const last = closing || asksToClose(request) ||
      leavesBodyUnread(served, contentLength, response.status);
    // Lingers before the answer, not after: Bun closes the socket once the answer is written. Not on a 408: its
    // client has stopped sending.
    if (lingering !== undefined) {
      await lingering.settle(
        response.status !== 408 && leavesBodyUnread(served, contentLength, response.status),
      );
    }
    return withKeepAliveTimer(
      last ? saidLast(response) : response,
      () => server.timeout(request, idle.keepAlive),
      limits.sendTimeoutMs,
    );
  };
  const server = requireBun().serve({
    hostname: options.hostname,
    port: options.port,
    reusePort: options.reusePort === true,
    idleTimeout: idle.head,
    // The handler's body reader enforces `server.max_body_size` with the gateway's 413 and usage record; Bun's
    // own limit (128 MiB by default) would answer a bare 413 first, unrecorded, and refuse a larger setting.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Bun aborts `request.signal` when the client goes away and cancels the response body stream, so a
    // client disconnect reaches the upstream request without help from this edge. Every request whose raw path
    // has at most RAW_DEPTH segments, none empty, comes through a route, its raw segments in `params`.
    routes: rawPathRoutes<BunHandler>((request, server) =>
      fetch(request, server, paramsHaveDotSegment(request.params))
    ),
    fetch: (request, server) => fetch(request, server, resolvedFromOtherPath(request.url)),
    // The handler never throws; this only guards against a bug turning into Bun's default error page.
    error: () => edgeResponse(500, LAST_RESORT),
    websocket: webSocketHandlers(sessions),
  });
  return Promise.resolve({
    hostname: server.hostname ?? options.hostname,
    port: server.port ?? options.port,
    shutdown: (until: number | Promise<void>) => {
      closing = true;
      for (const session of sessions) session.shutdown();
      return shutdownServer(server, until);
    },
  });
}

/** Watches a directory for {@linkcode watchResolvedFile}. */
const watchDirectory: DirectoryWatch = (dir, onEvent) => {
  const watcher: FSWatcher = watch(dir, { persistent: false }, () => onEvent());
  // A watched directory that is removed may report an error; the next look watches what is there instead.
  watcher.on("error", () => {});
  return () => watcher.close();
};

const encoder = new TextEncoder();
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes all of `text` to a file descriptor synchronously: log lines are never lost to a buffer that
 * `process.exit` discards. A descriptor some other code made non-blocking is retried after a short pause.
 * When the reader is gone (EPIPE) or the descriptor is unusable, the text is dropped rather than thrown: a
 * log line that cannot be written must not stop a request or a shutdown.
 */
export function writeAllSync(
  fd: number,
  text: string,
  write: (fd: number, bytes: Uint8Array) => number = writeSync,
): void {
  let bytes = encoder.encode(text);
  while (bytes.byteLength > 0) {
    try {
      bytes = bytes.subarray(write(fd, bytes));
    } catch (err) {
      const code = typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
      if (code !== "EAGAIN") return;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

/** The runtime edge for Bun: `bun main.ts …` and the `bun build --compile` binary. */
export const bunRuntime: Runtime = {
  name: "bun",
  version: bunGlobal()?.version ?? "unknown",
  fixedHeadDeadlineMs: BUN_HEAD_DEADLINE_MS,
  // argv is [bun, script, ...args] when run from source and [binary, /$bunfs/..., ...args] when compiled.
  args: () => process.argv.slice(2),
  env: () => ({ ...process.env }),
  serve,
  onShutdownSignal(handler) {
    let fired = false;
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.on(signal, () => {
        if (fired) return;
        fired = true;
        handler(signal);
      });
    }
  },
  onReloadSignal(handler) {
    process.on("SIGHUP", () => handler());
  },
  watchFile: (path, handler) => watchResolvedFile(path, handler, watchDirectory),
  exit: (code) => process.exit(code),
  writeStdout: (text) => writeAllSync(1, text),
  writeStderr: (text) => writeAllSync(2, text),
};
