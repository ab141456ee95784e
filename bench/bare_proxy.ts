/**
 * The baseline the gateway is held to: a bare fetch-and-forward proxy with no auth, no parsing and no
 * logging. It reads the request body, forwards it with `fetch` to the same path upstream, and streams the
 * answer back. Runs unchanged on Deno (`Deno.serve`) and Bun (`Bun.serve`).
 *
 * Usage: `deno run -A bench/bare_proxy.ts --port 9100 --upstream http://127.0.0.1:9000 [--edge node]`
 * (or `bun bench/bare_proxy.ts …`). Prints `{"listening":port,"runtime":…}` once ready.
 *
 * `--edge node` (Deno only): the same handler served through the gateway's own edge,
 * `lib/runtime/node_http_edge.ts` (`node:http` with the connection limits), instead of `Deno.serve`. The
 * gateway on Deno cannot be cheaper than this: it is the share of the gap to the bare proxy that the edge
 * alone takes, measured in the same run.
 *
 * @module
 */
import type { ClientRequest } from "../lib/runtime/types.ts";

/** What the proxy needs from `Bun.serve`. */
interface BunServeLike {
  serve(options: {
    hostname: string;
    port: number;
    idleTimeout?: number;
    fetch: (request: Request) => Response | Promise<Response>;
  }): { port: number };
  version: string;
}

const bun = (globalThis as unknown as { Bun?: BunServeLike }).Bun;
const args: string[] = bun
  ? (globalThis as unknown as { process: { argv: string[] } }).process.argv.slice(2)
  : Deno.args;

function option(name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
}

const PORT = Number(option("port", "9100"));
const UPSTREAM = option("upstream", "http://127.0.0.1:9000").replace(/\/$/, "");
const EDGE = option("edge", "native");
if (EDGE !== "native" && (EDGE !== "node" || bun)) throw new Error(`--edge ${EDGE}: only "node", on Deno`);

/**
 * On the `node:http` edge the answer's body is read in JavaScript, and a Deno fetch body read the default way
 * takes 64 KiB per pending read: read into 1 KiB buffers as the gateway's transport does while it waits
 * (`STREAM_WAIT_BYTES`), so the edge row's memory per stream is the edge's, not that buffer's.
 */
function smallReads(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader({ mode: "byob" });
  let buffer = new ArrayBuffer(1024);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read(new Uint8Array(buffer));
      if (done) return controller.close();
      buffer = value.buffer as ArrayBuffer;
      controller.enqueue(value.slice());
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
}

async function handler(request: ClientRequest, client?: { signal: AbortSignal }): Promise<Response> {
  const url = request.url;
  const path = url.slice(url.indexOf("/", url.indexOf("//") + 2));
  const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.bytes();
  const upstream = await fetch(UPSTREAM + path, {
    method: request.method,
    headers: { "content-type": request.headers.get("content-type") ?? "application/json" },
    body,
    signal: client?.signal ?? request.signal,
  });
  const answer = EDGE === "node" && upstream.body !== null ? smallReads(upstream.body) : upstream.body;
  return new Response(answer, {
    status: upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/octet-stream" },
  });
}

if (bun) {
  const server = bun.serve({
    hostname: "127.0.0.1",
    port: PORT,
    idleTimeout: 0,
    fetch: (request) => handler(request),
  });
  console.log(JSON.stringify({ listening: server.port, runtime: `bun ${bun.version}` }));
} else if (EDGE === "node") {
  const { serveNodeHttp } = await import("../lib/runtime/node_http_edge.ts");
  const server = await serveNodeHttp({ hostname: "127.0.0.1", port: PORT, handler });
  console.log(
    JSON.stringify({ listening: server.port, runtime: `deno ${Deno.version.deno} (node:http edge)` }),
  );
} else {
  Deno.serve({
    hostname: "127.0.0.1",
    port: PORT,
    onListen: (addr) =>
      console.log(JSON.stringify({ listening: addr.port, runtime: `deno ${Deno.version.deno}` })),
  }, (request) => handler(request));
}
