/**
 * The WebSocket half of the recording proxy (recording_proxy.ts): it opens the same WebSocket to the gateway
 * with the agent's handshake headers and, once the gateway has accepted it, upgrades the agent's request and
 * relays every message both ways as it comes, recording each message the agent sends and how the gateway
 * answered it (the events of one answer end with `response.completed`, `response.incomplete`,
 * `response.failed` or an `error` event, and answers come in the order of the messages).
 *
 * @module
 */
import type { ProxiedRequest } from "./recording_proxy.ts";

/** Headers of the agent's handshake the proxy's own WebSocket client sets itself. */
const HANDSHAKE_HEADERS = /^(upgrade|sec-websocket-.*)$/;

/** How long the gateway may take to accept the handshake. */
const CONNECT_TIMEOUT_MS = 10_000;

/** Where messages are recorded, and the set of open pairs the proxy closes when it stops. */
export interface PassthroughLog {
  record(message: ProxiedRequest): void;
  sockets: Set<() => void>;
}

/** Opens a WebSocket to `url` (http or https), resolving once open, rejecting if refused or closed first. */
function connect(url: string, headers: Headers): Promise<WebSocket> {
  // Deno's and Bun's WebSocket take the handshake's headers as an option; the DOM's (and Node's) constructor
  // type knows only subprotocols, and a check that loads Node's types for `node:` imports reads that one.
  const options = { headers } as unknown as string[];
  const socket = new WebSocket(url.replace(/^http/, "ws"), options);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no handshake answer in ${CONNECT_TIMEOUT_MS} ms`));
    }, CONNECT_TIMEOUT_MS);
    socket.onopen = () => {
      clearTimeout(timer);
      resolve(socket);
    };
    socket.onerror = (e) => {
      clearTimeout(timer);
      reject(new Error(e instanceof ErrorEvent ? e.message : "WebSocket handshake failed"));
    };
  });
}

/** Deno lets a script close with 1000 or 3000–4999 only: any other code goes on as 1000, named in the reason. */
function closeArgs(code: number, reason: string): [number, string] {
  if (code === 1000 || (code >= 3000 && code <= 4999)) return [code, reason];
  return [1000, `closed with ${code}${reason ? `: ${reason}` : ""}`.slice(0, 120)];
}

/** The status a server event ends an answer with, or undefined when the answer goes on. */
function endOf(event: Record<string, unknown>): number | undefined {
  if (event.type === "response.completed" || event.type === "response.incomplete") return 200;
  if (event.type === "response.failed") return 502;
  if (event.type === "error") return typeof event.status === "number" ? event.status : 500;
  return undefined;
}

/**
 * Answers the agent's WebSocket handshake `request` (already recorded as `entry`) by connecting it through to
 * `url` with the `forward`ed headers: 101 when the gateway accepted it, else 502 (entry status 599).
 */
export async function passWebSocket(
  request: Request,
  url: string,
  forward: Headers,
  entry: ProxiedRequest,
  log: PassthroughLog,
): Promise<Response> {
  const headers = new Headers();
  forward.forEach((v, k) => {
    if (!HANDSHAKE_HEADERS.test(k)) headers.set(k, v);
  });
  let upstream: WebSocket;
  try {
    upstream = await connect(url, headers);
  } catch (e) {
    entry.status = 599;
    entry.error = `proxy: the gateway refused the WebSocket handshake: ${e}`;
    return new Response("proxy: WebSocket handshake refused", { status: 502 });
  }
  entry.status = 101;
  const { socket, response } = Deno.upgradeWebSocket(request);
  const path = new URL(url).pathname;
  /** The agent's messages not answered yet, oldest first. */
  const waiting: ProxiedRequest[] = [];
  const close = (code = 1000, reason = "") => {
    for (const s of [socket, upstream]) {
      if (s.readyState !== WebSocket.CONNECTING && s.readyState !== WebSocket.OPEN) continue;
      try {
        s.close(...closeArgs(code, reason));
      } catch { /* closing already */ }
    }
  };
  log.sockets.add(close);
  socket.onmessage = (e) => {
    if (typeof e.data === "string") {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(e.data);
      } catch {
        body = { _unparsed: e.data.slice(0, 200) };
      }
      const message: ProxiedRequest = {
        method: "WS",
        path,
        headers: {},
        body,
        status: 0,
      };
      waiting.push(message);
      log.record(message);
    }
    if (upstream.readyState === WebSocket.OPEN) upstream.send(e.data);
  };
  upstream.onmessage = (e) => {
    if (typeof e.data === "string") {
      let event: Record<string, unknown> = {};
      try {
        event = JSON.parse(e.data);
      } catch { /* relayed as it is */ }
      const status = endOf(event);
      const message = status === undefined ? undefined : waiting.shift();
      if (message && status !== undefined) {
        message.status = status;
        if (status >= 400) message.error = e.data;
      }
    }
    if (socket.readyState === WebSocket.OPEN) socket.send(e.data);
  };
  socket.onclose = (e) => {
    log.sockets.delete(close);
    close(e.code, e.reason);
  };
  upstream.onclose = (e) => {
    log.sockets.delete(close);
    close(e.code, e.reason);
  };
  socket.onerror = () => close(1011);
  upstream.onerror = () => close(1011);
  return response;
}
