/**
 * What the rest of the gateway needs from a JavaScript runtime. Only `lib/runtime/` implements it, so the
 * gateway runs unchanged on Deno and Bun.
 *
 * @module
 */

/** A listening HTTP server. */
export interface RunningServer {
  readonly hostname: string;
  readonly port: number;
  /**
   * Stops accepting connections, lets in-flight requests and streams finish until `deadline` (milliseconds from
   * now, or once the promise resolves: the gateway's drain says when, counted from the moment it cut what was
   * still open), then closes whatever is left.
   */
  shutdown(deadline: number | Promise<void>): Promise<void>;
}

/**
 * Limits on client connections (`server.connections`, in milliseconds), so stalled or idle sockets cannot pile
 * up on an exposed port. None of them cuts a response in progress: a stream that is silent while the upstream
 * thinks is governed by the upstream idle timeout, not by these.
 */
export interface ConnectionLimits {
  /** Until the whole request head (request line and headers) has arrived. */
  headerTimeoutMs: number;
  /** Until the whole request body has arrived, counted from the end of the head. */
  bodyTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open between requests. */
  keepAliveTimeoutMs: number;
  /** How long a client may take none of a streamed answer's bytes before its connection is closed. */
  sendTimeoutMs: number;
  /** Open client connections at most; past it a new connection is answered 503 and closed. */
  maxConnections: number;
}

/** The defaults of `server.connections`, for callers that pass no limits. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 60_000,
  keepAliveTimeoutMs: 65_000,
  sendTimeoutMs: 60_000,
  maxConnections: 8192,
};

/**
 * What an edge knows of the client connection a request came on. `signal` aborts when the client goes away
 * before its answer is complete. An edge whose `Request.signal` already does so (Bun's) may leave it out; the
 * `node:http` edge gives it here rather than as the Request's signal: on Deno, a Request given a signal builds
 * a dependent signal of its own, a measurable part of what building the Request costs on every request.
 */
export interface ClientConnection {
  readonly signal: AbortSignal;
}

/**
 * The client's HTTP request as the gateway reads it: the part of the web `Request` its handlers use. Bun's and
 * Deno's own Requests are one; the `node:http` edge gives a lighter object for a body that has already arrived
 * ({@linkcode BufferedRequest}), because on Deno building a web `Request` costs about 9 µs a request.
 */
export interface ClientRequest {
  readonly method: string;
  /** The whole URL, serialised as the URL standard does (as `Request.url`). */
  readonly url: string;
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
  /** Never aborts for a request from an edge that gives a {@linkcode ClientConnection}; read that one. */
  readonly signal: AbortSignal;
  bytes(): Promise<Uint8Array<ArrayBuffer>>;
}

/** A fetch handler as the edges call it. */
export type EdgeHandler = (request: ClientRequest, client?: ClientConnection) => Promise<Response>;

/** Options for {@linkcode Runtime.serve}. */
export interface ServeOptions {
  hostname: string;
  port: number;
  handler: EdgeHandler;
  /** Taken at start: changing them needs a restart. Defaults: {@linkcode DEFAULT_CONNECTION_LIMITS}. */
  limits?: ConnectionLimits;
  /**
   * Share the port with other listeners of this machine that ask the same (`SO_REUSEPORT`, Linux): how the
   * workers of `serve --workers N` each listen on one port, the kernel spreading connections between them.
   */
  reusePort?: boolean;
}

/** The runtime edge. */
export interface Runtime {
  readonly name: "deno" | "bun";
  readonly version: string;
  /**
   * The runtime's own deadline for a connection's first request head, in milliseconds, where the edge cannot
   * apply `header_timeout` (Bun: about 10 s from the connection's opening, whatever the setting, closed without
   * an answer); absent where the edge applies `header_timeout` itself. `serve` warns at start when the two
   * differ, since the configured value is then not what clients get.
   */
  readonly fixedHeadDeadlineMs?: number;
  args(): string[];
  env(): Record<string, string | undefined>;
  serve(options: ServeOptions): Promise<RunningServer>;
  /** Calls `handler` once on SIGTERM or SIGINT. */
  onShutdownSignal(handler: (signal: string) => void): void;
  /** Calls `handler` on every SIGHUP (the conventional "reload your config"). */
  onReloadSignal(handler: () => void): void;
  /**
   * Calls `handler` when the file at `path` changes, also when an editor or a deploy tool replaces it by
   * renaming a new file over it, and when `path` is a symbolic link (or passes through one) whose target is
   * edited or which is pointed elsewhere: a Kubernetes ConfigMap volume's swap of its `..data` link. Bursts of
   * events are coalesced, and only a change of what `path` resolves to calls it. Returns a function that stops
   * watching.
   */
  watchFile(path: string, handler: () => void): () => void;
  exit(code: number): never;
  writeStdout(text: string): void;
  writeStderr(text: string): void;
}

/**
 * The server's side of an open WebSocket, as the edge hands it to a {@linkcode WebSocketSession}. Only text
 * messages are sent: the gateway speaks JSON.
 */
export interface WebSocketPeer {
  send(text: string): void;
  /** Sends a close frame (`code`, a `reason` of at most 123 bytes) and closes the connection. */
  close(code: number, reason: string): void;
  /** Bytes queued for the client and not yet written, so a session can wait for a slow reader. */
  readonly bufferedAmount: number;
}

/**
 * What a handler that accepts a WebSocket handshake gives the edge: the callbacks of one connection. The edge
 * performs the handshake (`101 Switching Protocols`), then calls `open` once, `message` for each message in
 * order, `closed` once when the connection is gone (either side, or an error), and `shutdown` when the server
 * begins shutting down (the session should close soon; the edge closes what is left at the end of the grace).
 */
export interface WebSocketSession {
  /** The largest message taken; a bigger one closes the connection with 1009 (Message Too Big). */
  readonly maxMessageBytes: number;
  open(peer: WebSocketPeer): void;
  message(data: string | Uint8Array): void;
  closed(code: number, reason: string): void;
  shutdown(): void;
}

/** The upper bound of any WebSocket message an edge buffers, whatever a session allows (64 MiB). */
export const MAX_WEBSOCKET_MESSAGE_BYTES = 64 * 1024 * 1024;

const sessions = new WeakMap<Response, WebSocketSession>();

/**
 * The answer of a handler that accepts a WebSocket handshake: a bodiless Response that the edge recognises
 * (and only for a request asking to upgrade), whose headers go on the `101` answer. A web Response cannot carry
 * status 101, so the session is kept beside it rather than in it.
 */
export function acceptWebSocket(session: WebSocketSession, headers?: HeadersInit): Response {
  const response = new Response(null, { status: 200, headers });
  sessions.set(response, session);
  return response;
}

/** The session of an answer made by {@linkcode acceptWebSocket}; undefined for any other answer. */
export function webSocketOf(response: Response): WebSocketSession | undefined {
  return sessions.get(response);
}

const produced = new WeakSet<Response>();

/**
 * `response` marked as a stream: its body is written as it is produced, each part at once, and a failure while
 * reading it cuts the connection after what was sent. The edge cannot tell a stream by its content type alone
 * (Gemini's streamed JSON array is `application/json`), and reading every body as a stream would cost each
 * finished JSON answer a copy.
 */
export function streamedAnswer(response: Response): Response {
  produced.add(response);
  return response;
}

/** Whether `response` was marked by {@linkcode streamedAnswer}. */
export function isStreamedAnswer(response: Response): boolean {
  return produced.has(response);
}
