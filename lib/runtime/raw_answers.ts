/**
 * The answers the node:http edge writes itself, as raw HTTP/1.1 bytes on sockets no handler owns (too many
 * connections, a head or body too slow, headers too large, bytes that are not HTTP, a CONNECT to another host),
 * or as the body of a
 * request the handler never saw; each in OpenAI's error shape, each closing the connection. The refusal of a
 * WebSocket handshake is the Bun edge's too.
 *
 * @module
 */
import type { Socket } from "node:net";
import type { ConnectionEnd } from "../errors.ts";

/** An OpenAI-shaped error body. */
function errorBody(message: string, type: string, code: string): string {
  return JSON.stringify({ error: { message, type, param: null, code } });
}

/**
 * The headers of every answer an edge writes itself. The edge answers before any path is read (a 431 for
 * headers too large, a 408, bytes that are not HTTP) or without the handler, so it cannot tell an admin or
 * console request from another: each answer is kept by no cache (docs/admin_api.md promises `no-store` on every
 * answer under `/admin`, errors included) and is not sniffed as anything but the JSON it is.
 */
export const EDGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/json",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
};

/** {@linkcode EDGE_HEADERS} as raw header lines. */
const EDGE_HEADER_LINES = Object.entries(EDGE_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join(
  "",
);

/** A whole raw HTTP/1.1 response that closes the connection, for sockets no handler owns. */
function rawResponse(status: string, body: string, extra = ""): string {
  const length = new TextEncoder().encode(body).byteLength;
  return `HTTP/1.1 ${status}\r\n${EDGE_HEADER_LINES}content-length: ${length}\r\n${extra}` +
    `connection: close\r\n\r\n${body}`;
}

/** An answer the edge makes itself (with {@linkcode EDGE_HEADERS} and `extra`), for a handler's place. */
export function edgeResponse(status: number, body: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { ...EDGE_HEADERS, ...extra } });
}

export const TOO_MANY_CONNECTIONS = rawResponse(
  "503 Service Unavailable",
  errorBody(
    "The gateway has too many open connections; retry shortly.",
    "server_error",
    "too_many_connections",
  ),
  "retry-after: 1\r\n",
);
/**
 * What the edge's answers to a broken request say: the raw answer on the socket, and the end of a request whose
 * handler was already running (its body still arriving), so its record says what the client got.
 */
export const EDGE_ENDS = {
  requestTimeout: {
    status: 408,
    code: "request_timeout",
    message: "The request was not received in time; send the request head and body without pausing.",
  },
  headersTooLarge: {
    status: 431,
    code: "request_headers_too_large",
    message: "The request headers are too large.",
  },
  malformed: { status: 400, code: "malformed_request", message: "The request is not valid HTTP/1.1." },
} as const satisfies Record<string, ConnectionEnd>;

/** An edge end as a raw answer. */
function endAnswer(status: string, end: ConnectionEnd): string {
  return rawResponse(status, errorBody(end.message, "invalid_request_error", end.code));
}

export const REQUEST_TIMEOUT = endAnswer("408 Request Timeout", EDGE_ENDS.requestTimeout);
export const HEADERS_TOO_LARGE = endAnswer("431 Request Header Fields Too Large", EDGE_ENDS.headersTooLarge);
/** Node's parser refuses such a request on Deno; the Bun edge refuses what Bun's parser lets through (`400`). */
export const NOT_VALID_HTTP = errorBody(
  EDGE_ENDS.malformed.message,
  "invalid_request_error",
  EDGE_ENDS.malformed.code,
);
export const BAD_REQUEST = rawResponse("400 Bad Request", NOT_VALID_HTTP);
export const CONNECT_ELSEWHERE = rawResponse(
  "405 Method Not Allowed",
  errorBody(
    "CONNECT to another host is not allowed: the gateway is not a proxy.",
    "invalid_request_error",
    "method_not_allowed",
  ),
);
export const INVALID_REQUEST = errorBody(
  "The request's URL or headers are not valid.",
  "invalid_request_error",
  "malformed_request",
);
/** A request target with a dot segment (lib/runtime/dot_segments.ts), refused by both edges. */
export const DOT_SEGMENT = errorBody(
  "The request path has a `.` or `..` segment (in any encoding, or after a `\\`); send the path it resolves to.",
  "invalid_request_error",
  "invalid_path",
);
export const LAST_RESORT = errorBody("The gateway had an internal error.", "server_error", "internal_error");
/**
 * The body of a WebSocket handshake an edge refuses after the handler accepted it (the gateway checks the key
 * and the version itself, lib/http/websocket_handshake.ts: this is for anything else an edge finds wrong).
 */
export const NOT_A_HANDSHAKE = errorBody(
  "The request is not a valid WebSocket handshake.",
  "invalid_request_error",
  "invalid_websocket_handshake",
);

/** How long a refused or failed socket may take to read our answer before it is destroyed. */
const LINGER_MS = 1_000;

/**
 * Answers `payload` on a socket no request owns and closes it. The socket keeps reading (and dropping)
 * what the client still sends until it closes its side, or for {@linkcode LINGER_MS}: closing with unread
 * bytes would reset the connection and the client could lose the answer.
 */
export function answerAndClose(socket: Socket, payload: string, lingering: Set<Socket>): void {
  if (socket.writable) socket.write(payload);
  closeAnswered(socket, lingering);
}

/** Closes a socket whose answer has been written, as {@linkcode answerAndClose} does. */
export function closeAnswered(socket: Socket, lingering: Set<Socket>): void {
  lingering.add(socket);
  socket.on("error", () => {});
  socket.on("data", () => {});
  socket.once("end", () => socket.destroy());
  socket.once("close", () => lingering.delete(socket));
  if (socket.writable) socket.end();
  setTimeout(() => socket.destroy(), LINGER_MS).unref?.();
}
