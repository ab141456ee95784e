/**
 * A pass-through HTTP proxy between an agent and the gateway that records what the agent sent (method, path,
 * headers but credentials, body) and, for every answer that is not a success, the gateway's status and body, so
 * a test can show the gateway's exact error even when the agent retries around it. Successful answers (SSE
 * included) are piped through untouched, as they arrive.
 *
 * @module
 */

/** One request the agent made, and the gateway's answer status (and body when it was an error). */
export interface ProxiedRequest {
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

const SECRET_HEADERS = new Set(["authorization", "x-api-key", "api-key"]);
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
    stop: () => server.shutdown(),
  };
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
