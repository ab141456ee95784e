/**
 * The gateway's own cost per request, without sockets: `deno bench -A bench/hot_path_bench.ts`. The real
 * request path (`startServer` with `bench/config.yaml`: auth, alias routing, policy, access log, SQLite usage)
 * runs in-process with `fetch` answering from memory, next to a bare handler that only reads the body, calls
 * the same in-memory `fetch` and passes the answer on. The difference is what the gateway adds on top of the
 * runtime's own HTTP work; the socket-level numbers are in `bench/run.ts`.
 *
 * @module
 */
import { parseConfigText } from "../lib/config/load.ts";
import { createProviders } from "../lib/providers/registry.ts";
import { startServer } from "../lib/serve.ts";
import { capturingRuntime } from "./harness/capturing_runtime.ts";

const TOKEN = "gw-bench-token-0123456789abcdef";
const CHAT_BODY = JSON.stringify({
  model: "bench-chat",
  messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
});
const COMPLETION = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1_700_000_000,
  model: "bench-model",
  choices: [{
    index: 0,
    message: { role: "assistant", content: "Hello! How can I help you today?" },
    finish_reason: "stop",
  }],
  usage: { prompt_tokens: 12, completion_tokens: 9, total_tokens: 21 },
});

// The upstream answers from memory: what is measured is the gateway, not the loopback network.
globalThis.fetch = (_input: RequestInfo | URL, init?: RequestInit) => {
  init?.body; // a real fetch reads the body; keep the reference so it is not optimised away
  return Promise.resolve(new Response(COMPLETION, { headers: { "content-type": "application/json" } }));
};

const dataDir = await Deno.makeTempDir({ prefix: "gateway-hot-path-" });
const env = {
  BENCH_UPSTREAM_URL: "http://upstream.invalid",
  BENCH_DATA_DIR: dataDir,
  BENCH_TOKEN: TOKEN,
};
const source = new URL("./config.yaml", import.meta.url);
const loaded = parseConfigText(await Deno.readTextFile(source), { source: source.pathname, env });
if (!loaded.ok) throw new Error(`bench/config.yaml: ${JSON.stringify(loaded.issues)}`);

const captured = capturingRuntime(env);
const runtime = captured.runtime;
await startServer(runtime, {
  config: loaded.config,
  providers: createProviders(loaded.config.providers, env),
});
const gateway = captured.handler();

const chatRequest = () =>
  new Request("http://gateway.test/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body: CHAT_BODY,
  });

async function bare(request: Request): Promise<Response> {
  const body = await request.arrayBuffer();
  const upstream = await fetch("http://upstream.invalid/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal: request.signal,
  });
  return new Response(upstream.body, {
    status: upstream.status,
    headers: { "content-type": upstream.headers.get("content-type") ?? "application/json" },
  });
}

Deno.bench(
  "bare handler (read body, fetch, pass the answer on)",
  { group: "chat", baseline: true },
  async () => {
    const response = await bare(chatRequest());
    await response.text();
  },
);

Deno.bench("gateway handler (non-stream chat)", { group: "chat" }, async () => {
  const response = await gateway(chatRequest());
  if (response.status !== 200) throw new Error(`status ${response.status}: ${await response.text()}`);
  await response.text();
});
