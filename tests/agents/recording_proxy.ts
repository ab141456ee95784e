/**
 * A pass-through HTTP proxy between an agent and the gateway that records what the agent sent (method, path,
 * headers but credentials, body) and, for every answer that is not a success, the gateway's status and body, so
 * a test can show the gateway's exact error even when the agent retries around it. Successful answers (SSE
 * included) are piped through untouched, as they arrive.
 *
 * A WebSocket handshake (`Upgrade: websocket`) is passed through too (websocket_passthrough.ts): the handshake
 * is recorded as a `GET` (status 101 once the gateway accepted it), and every text message the agent sends on
 * it as one more request, method `WS`, with its JSON as the body and, as status, how the gateway answered it:
 * 200 for a `response.completed` (or `response.incomplete`), the `status` of an `error` event, 502 for a
 * `response.failed` (those with their event as the error), 0 while unanswered.
 *
 * @module
 */
import { passWebSocket } from "./websocket_passthrough.ts";

/** One request the agent made, and the gateway's answer status (and body when it was an error). */
export interface ProxiedRequest {
  /** The HTTP method, or `WS` for a message sent on a WebSocket. */
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> | null;
  status: number;
  /** The gateway's answer when its status was 400 or more. */
  error?: string;
}

/** A running proxy. */
export interface RecordingProxy {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `url + "/v1"` */
  baseURL: string;
  requests: ProxiedRequest[];
  stop(): Promise<void>;
}

const SECRET_HEADERS = new Set(["authorization", "x-api-key", "api-key", "x-goog-api-key"]);
const HOP_HEADERS = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "keep-alive",
]);

/** Starts a proxy to `target` (`http://127.0.0.1:<port>`) on a free loopback port. */
export function startRecordingProxy(target: string): RecordingProxy {
  const proxy: RecordingProxy = {
    url: "",
    baseURL: "",
    requests: [],
    async stop() {
      for (const close of sockets) close();
      await server.shutdown();
    },
  };
  /** Closes the open WebSocket pairs, so shutting down does not wait for them. */
  const sockets = new Set<() => void>();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      const url = new URL(request.url);
      const raw = request.method === "GET" || request.method === "HEAD"
        ? null
        : new Uint8Array(await request.arrayBuffer());
      const headers: Record<string, string> = {};
      const forward = new Headers();
      request.headers.forEach((v, k) => {
        if (!SECRET_HEADERS.has(k)) headers[k] = v;
        if (!HOP_HEADERS.has(k)) forward.set(k, v);
      });
      let body: Record<string, unknown> | null = null;
      if (raw?.length) {
        try {
          body = JSON.parse(new TextDecoder().decode(raw));
        } catch {
          body = { _undecoded_bytes: raw.length };
        }
      }
      const entry: ProxiedRequest = {
        method: request.method,
        path: url.pathname,
        headers,
        body,
        status: 0,
      };
      proxy.requests.push(entry);
      if (request.headers.get("upgrade")?.toLowerCase() === "websocket") {
        const record = (message: ProxiedRequest) => proxy.requests.push(message);
        return await passWebSocket(request, `${target}${url.pathname}${url.search}`, forward, entry, {
          record,
          sockets,
        });
      }
      let answer: Response;
      try {
        answer = await fetch(`${target}${url.pathname}${url.search}`, {
          method: request.method,
          headers: forward,
          body: raw,
          signal: request.signal,
        });
      } catch (e) {
        entry.status = 599;
        entry.error = `proxy: ${e}`;
        return new Response("proxy: gateway unreachable", { status: 502 });
      }
      entry.status = answer.status;
      const out = new Headers(answer.headers);
      out.delete("content-encoding"); // fetch decoded it
      out.delete("content-length");
      if (answer.status >= 400) {
        const text = await answer.text();
        entry.error = text;
        return new Response(text, { status: answer.status, headers: out });
      }
      return new Response(answer.body, { status: answer.status, headers: out });
    },
  );
  proxy.url = `http://127.0.0.1:${server.addr.port}`;
  proxy.baseURL = `${proxy.url}/v1`;
  return proxy;
}
