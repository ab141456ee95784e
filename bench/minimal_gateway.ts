/**
 * How far a gateway on Bun can go towards its bare proxy: a `Bun.serve` handler doing only what every gateway
 * request must, added one piece at a time (`--steps N`, cumulative), so the CPU per request of each piece reads
 * off against `bench/bare_proxy.ts` under the same load:
 *
 * 0. read the body, parse it, forward it, answer the upstream's text (the bare proxy, with a JSON parse);
 * 1. + the token's SHA-256 (the lookup key of every token);
 * 2. + the upstream body rebuilt (the alias replaced by the target's model);
 * 3. + the answer parsed and rebuilt (the model named back as the alias);
 * 4. + an access-log line (JSON, written in 5 ms batches);
 * 5. + one message per request to a worker thread (the usage record's way to the database).
 *
 * Not a gateway: no auth decision, policy, routing, usage store or metrics. A floor to read the gateway's
 * figures against, not a target. Usage: `bun bench/minimal_gateway.ts --port 9110 --upstream
 * http://127.0.0.1:9000 [--steps 5]`; drive it with wrk as `bench/run.ts` does (POST /v1/chat/completions).
 *
 * @module
 */
import { createHash } from "node:crypto";

/** What this script needs from Bun. */
interface BunLike {
  serve(options: {
    hostname: string;
    port: number;
    idleTimeout?: number;
    fetch: (request: Request) => Promise<Response>;
  }): { port: number };
  write(destination: unknown, data: string): Promise<number>;
  stdout: unknown;
}

const bun = (globalThis as unknown as { Bun?: BunLike }).Bun;
if (bun === undefined) throw new Error("bench/minimal_gateway.ts runs on Bun");
const args = (globalThis as unknown as { process: { argv: string[] } }).process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const PORT = Number(option("port", "9110"));
const UPSTREAM = `${option("upstream", "http://127.0.0.1:9000").replace(/\/$/, "")}/v1/chat/completions`;
const STEPS = Number(option("steps", "5"));

const worker = new Worker(
  URL.createObjectURL(new Blob(["self.onmessage = () => {};"], { type: "application/javascript" })),
);
const decoder = new TextDecoder();
let pending: string[] = [];

const server = bun.serve({
  hostname: "127.0.0.1",
  port: PORT,
  idleTimeout: 0,
  async fetch(request) {
    const started = performance.now();
    const bytes = await request.bytes();
    const body = JSON.parse(decoder.decode(bytes));
    if (STEPS >= 1) {
      createHash("sha256").update((request.headers.get("authorization") ?? "").slice(7)).digest("hex");
    }
    const upstream = await fetch(UPSTREAM, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer sk-upstream" },
      body: STEPS >= 2 ? JSON.stringify({ ...body, model: "bench-model" }) : bytes,
      signal: request.signal,
    });
    let text = await upstream.text();
    if (STEPS >= 3) text = JSON.stringify({ ...JSON.parse(text), model: body.model });
    if (STEPS >= 4) {
      pending.push(JSON.stringify({
        time: new Date().toISOString(),
        msg: "request",
        path: "/v1/chat/completions",
        status: upstream.status,
        latency_ms: performance.now() - started,
      }));
      if (pending.length === 1) {
        setTimeout(() => {
          void bun.write(bun.stdout, `${pending.join("\n")}\n`);
          pending = [];
        }, 5);
      }
    }
    if (STEPS >= 5) worker.postMessage({ time: Date.now(), model: body.model, status: upstream.status });
    return new Response(text, { status: upstream.status, headers: { "content-type": "application/json" } });
  },
});
console.log(JSON.stringify({ listening: server.port, steps: STEPS }));
