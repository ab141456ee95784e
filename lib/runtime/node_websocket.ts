/**
 * WebSocket upgrades on the `node:http` edge (Deno). Node's server hands a request that asks to upgrade to
 * WebSocket to its `'upgrade'` event with the raw socket; this module runs the gateway's handler on it like on
 * any request (so authentication and its 401 are the gateway's own) and, when the handler accepts the
 * handshake (`acceptWebSocket`, types.ts), lets the `ws` library speak the protocol (handshake, framing,
 * masking, ping/pong, close, the size limit). Any other answer is written to the socket as a plain HTTP
 * response that closes the connection. `ws` is pure JavaScript over `node:net`, so it runs the same in Deno
 * and in a `bun build --compile` binary (where this edge is bundled but Bun.serve serves instead).
 *
 * @module
 */
import { STATUS_CODES } from "node:http";
import type http from "node:http";
import type { Socket } from "node:net";
import { WebSocketServer } from "ws";
import { DOT_SEGMENT, edgeResponse, INVALID_REQUEST, LAST_RESORT, NOT_A_HANDSHAKE } from "./raw_answers.ts";
import { DotSegmentError } from "./dot_segments.ts";
import {
  type ClientRequest,
  type EdgeHandler,
  webSocketOf,
  type WebSocketPeer,
  type WebSocketSession,
} from "./types.ts";

/** The part of a `ws` connection this module uses. */
interface WsConnection {
  readonly bufferedAmount: number;
  send(data: string): void;
  close(code: number, reason: string): void;
  on(event: "message", listener: (data: Uint8Array, isBinary: boolean) => void): void;
  on(event: "error", listener: (err: Error) => void): void;
  once(event: "close", listener: (code: number, reason: Uint8Array) => void): void;
}

/** The part of `ws`'s `WebSocketServer` this module uses. */
interface WsServer {
  on(event: "headers", listener: (lines: string[]) => void): void;
  /** A handshake `ws` refuses; with a listener, `ws` leaves the answer to it. */
  on(event: "wsClientError", listener: (err: Error, socket: Socket) => void): void;
  handleUpgrade(
    req: http.IncomingMessage,
    socket: Socket,
    head: Uint8Array,
    done: (connection: WsConnection) => void,
  ): void;
}

type WsServerConstructor = new (options: {
  noServer: true;
  maxPayload: number;
  perMessageDeflate: false;
  clientTracking: false;
}) => WsServer;

const Server = WebSocketServer as unknown as WsServerConstructor;
const decoder = new TextDecoder();

/** The WebSocket connections of one server, for its shutdown. */
export interface WebSocketEdge {
  /** Is `socket` a WebSocket's (or a handshake's in progress), not an HTTP connection's? */
  owns(socket: Socket): boolean;
  /** Tells every open session that the server is shutting down. */
  shutdown(): void;
}

/** Does this request ask for a WebSocket (Node's `shouldUpgradeCallback`; other upgrades stay requests)? */
export function isWebSocketUpgrade(req: http.IncomingMessage): boolean {
  return req.headers.upgrade?.toLowerCase() === "websocket";
}

/** Writes a finished web Response on a raw socket as HTTP/1.1 and closes the connection. */
async function writeRaw(socket: Socket, response: Response): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer().catch(() => new ArrayBuffer(0)));
  let head = `HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ""}\r\n`;
  response.headers.forEach((value, name) => {
    if (name !== "content-length" && name !== "connection") head += `${name}: ${value}\r\n`;
  });
  head += `content-length: ${body.byteLength}\r\nconnection: close\r\n\r\n`;
  if (!socket.writable) return;
  socket.write(head);
  socket.end(body);
}

/**
 * The close code `ws` sends for a protocol error it reports (it keeps the code where this module cannot read
 * it): a message over the limit is 1009, text that is not UTF-8 1007, any other breach of the protocol 1002.
 */
function closeCodeOf(err: Error): number {
  const code = (err as { code?: unknown }).code;
  return code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH" ? 1009 : code === "WS_ERR_INVALID_UTF8" ? 1007 : 1002;
}

/**
 * Opens `session` on an upgraded connection. `ws` emits `'close'` only once the closing handshake is over: after
 * the client's close frame, or its own 30 s timeout when none comes. The session is told the connection is over
 * as soon as it is, whichever comes first: the client's close, a protocol error (`ws` then closes with its
 * code), or the socket closing.
 */
function open(
  connection: WsConnection,
  socket: Socket,
  session: WebSocketSession,
  onClosed: () => void,
): void {
  let ended = false;
  const end = (code: number, reason: string) => {
    if (ended) return;
    ended = true;
    onClosed();
    session.closed(code, reason);
  };
  const peer: WebSocketPeer = {
    send: (text) => connection.send(text),
    close: (code, reason) => connection.close(code, reason),
    get bufferedAmount() {
      return connection.bufferedAmount;
    },
  };
  connection.on("error", (err) => end(closeCodeOf(err), err.message));
  connection.on("message", (data, isBinary) => session.message(isBinary ? data : decoder.decode(data)));
  connection.once("close", (code, reason) => end(code, decoder.decode(reason)));
  socket.once("close", () => end(1006, ""));
  session.open(peer);
}

/**
 * Serves WebSocket upgrades on `server` with `handler`; `toRequest` builds the request of the handshake
 * (its signal aborts if the client goes away before the handler answers).
 */
export function serveWebSockets(
  server: http.Server,
  handler: EdgeHandler,
  toRequest: (req: http.IncomingMessage) => ClientRequest,
): WebSocketEdge {
  const sockets = new Set<Socket>();
  const sessions = new Set<WebSocketSession>();
  server.on("upgrade", async (req: http.IncomingMessage, socket: Socket, head: Uint8Array) => {
    sockets.add(socket);
    socket.on("error", () => {});
    const aborter = new AbortController();
    socket.once("close", () => {
      sockets.delete(socket);
      aborter.abort(new DOMException("The client closed the connection.", "AbortError"));
    });
    let request: ClientRequest;
    try {
      request = toRequest(req);
    } catch (err) {
      // A request target that is no path or URL (`*`, `ftp://…`), a path with a dot segment, or a header value the
      // Fetch API refuses: the client's mistake, the 400 the same request gets without `Upgrade`
      // (node_http_edge.ts), not a 500.
      const answer = edgeResponse(400, err instanceof DotSegmentError ? DOT_SEGMENT : INVALID_REQUEST);
      return void writeRaw(socket, answer).catch(() => socket.destroy());
    }
    let response: Response;
    try {
      response = await handler(request, { signal: aborter.signal });
    } catch {
      response = edgeResponse(500, LAST_RESORT);
    }
    const session = webSocketOf(response);
    if (socket.destroyed) {
      session?.closed(1006, "");
      return;
    }
    if (session === undefined) return void writeRaw(socket, response).catch(() => socket.destroy());
    const ws = new Server({
      noServer: true,
      maxPayload: session.maxMessageBytes,
      perMessageDeflate: false,
      clientTracking: false,
    });
    const extra: string[] = [];
    response.headers.forEach((value, name) => extra.push(`${name}: ${value}`));
    ws.on("headers", (lines) => lines.push(...extra));
    // The gateway checked the key and the version (lib/http/websocket_handshake.ts); anything else `ws` finds
    // wrong (a malformed Sec-WebSocket-Protocol) is refused in the gateway's JSON, not `ws`'s text/html.
    ws.on("wsClientError", (_err, refused) => {
      const answer = edgeResponse(400, NOT_A_HANDSHAKE);
      void writeRaw(refused, answer).catch(() => refused.destroy());
    });
    ws.handleUpgrade(req, socket, head, (connection) => {
      sessions.add(session);
      open(connection, socket, session, () => sessions.delete(session));
    });
  });
  return {
    owns: (socket) => sockets.has(socket),
    shutdown() {
      for (const session of sessions) session.shutdown();
    },
  };
}
