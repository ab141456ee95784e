/**
 * What an output guardrail costs a streamed answer, in-process (no sockets), on this tree:
 *
 *   deno run -A bench/guardrail_stream.ts [--rounds 12] [--batch 100] [--chunks 200]
 *
 * One gateway, started as `bench/hot_path_bench.ts` starts one (a fake runtime capturing the handler, `fetch`
 * answering from memory), with two aliases on the same target: `bench-plain` (no guardrail) and
 * `bench-guarded` (built-in PII guardrails on the answer: `CREDIT_CARD` denied, `EMAIL` and `PHONE` masked, on
 * the 256-character sliding window of lib/guardrails/output.ts). The upstream streams `--chunks` content chunks
 * of ordinary prose (about 24 characters each, nothing any recognizer matches, so every chunk is checked and
 * released). Rounds alternate the two aliases, the order flipped each round. Printed: µs per stream for each
 * (handler call to the whole body read, median over rounds of the per-round mean), and the difference per
 * content chunk — the CPU an output guardrail adds to each chunk. (The delay it adds is a matter of text, not
 * time: a character is released once 256 more have arrived or the answer ends.)
 *
 * Every stream is checked: status 200, ends with `[DONE]`, carries all the text.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { parseConfigText } from "../lib/config/load.ts";
import { createProviders } from "../lib/providers/registry.ts";
import { startServer } from "../lib/serve.ts";
import { capturingRuntime } from "./harness/capturing_runtime.ts";

const TOKEN = "gw-bench-token-0123456789abcdef";
const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "12" },
    batch: { type: "string", default: "100" },
    chunks: { type: "string", default: "200" },
  },
});
const rounds = Number(values.rounds);
const batch = Number(values.batch);
const chunks = Number(values.chunks);

const WORDS = "the quick brown fox jumps over a lazy dog while the gateway streams its answer".split(" ");
const pieces = Array.from({ length: chunks }, (_, i) => {
  let text = "";
  for (let j = 0; text.length < 24; j++) text += ` ${WORDS[(i * 7 + j) % WORDS.length]}`;
  return text;
});
const HEAD =
  '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model",';
const SSE = [
  `${HEAD}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
  ...pieces.map((t) =>
    `${HEAD}"choices":[{"index":0,"delta":{"content":${JSON.stringify(t)}},"finish_reason":null}]}`
  ),
  `${HEAD}"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
  `${HEAD}"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":${chunks * 5},"total_tokens":${
    12 + chunks * 5
  }}}`,
  "[DONE]",
].map((data) => `data: ${data}\n\n`);
const encoder = new TextEncoder();

globalThis.fetch = () => {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const event of SSE) controller.enqueue(encoder.encode(event));
      controller.close();
    },
  });
  return Promise.resolve(new Response(body, { headers: { "content-type": "text/event-stream" } }));
};

const dataDir = await Deno.makeTempDir({ prefix: "gateway-guardrail-bench-" });
const parsed = parseConfigText(
  `
server: { host: 127.0.0.1, port: 18080 }
providers:
  upstream: { type: openai, base_url: "http://bench.invalid/v1", api_key: sk-bench-upstream-key-0123456789 }
guardrails:
  cards: { type: pii, entities: [CREDIT_CARD], phase: output, action: deny }
  contacts: { type: pii, entities: [EMAIL, PHONE], phase: output, action: mask }
models:
  bench-plain: { type: chat, targets: [ { provider: upstream, model: bench-model } ] }
  bench-guarded:
    type: chat
    targets: [ { provider: upstream, model: bench-model } ]
    guardrails: [cards, contacts]
tokens:
  - { name: bench, token: "${TOKEN}", models: ["bench-*"] }
usage: { sqlite: none, spill: "${dataDir}/spill.jsonl" }
`,
  { source: "bench", env: {} },
);
if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
const { runtime, handler } = capturingRuntime({});
const server = await startServer(runtime, {
  config: parsed.config,
  providers: createProviders(parsed.config.providers, {}),
});
const handle = handler();
const expected = pieces.join("");

async function one(model: string): Promise<void> {
  const response = await handle(
    new Request("http://127.0.0.1:18080/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "tell me" }] }),
    }),
  );
  const text = await response.text();
  if (response.status !== 200 || !text.includes("data: [DONE]")) {
    throw new Error(`${model}: ${response.status}`);
  }
  let content = "";
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    for (const c of JSON.parse(line.slice(6)).choices ?? []) content += c.delta?.content ?? "";
  }
  if (content !== expected) throw new Error(`${model}: the text changed`);
}

async function meanMicros(model: string): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < batch; i++) await one(model);
  return ((performance.now() - started) * 1000) / batch;
}

for (let i = 0; i < 20; i++) (await one("bench-plain"), await one("bench-guarded"));
const plain: number[] = [];
const guarded: number[] = [];
for (let r = 0; r < rounds; r++) {
  if (r % 2 === 0) {
    (plain.push(await meanMicros("bench-plain")), guarded.push(await meanMicros("bench-guarded")));
  } else (guarded.push(await meanMicros("bench-guarded")), plain.push(await meanMicros("bench-plain")));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p = median(plain);
const g = median(guarded);
console.log(
  `${rounds} rounds × ${batch} streams of ${chunks} content chunks (${expected.length} characters)`,
);
console.log(`no guardrail:      ${p.toFixed(0)} µs per stream`);
console.log(`output guardrails: ${g.toFixed(0)} µs per stream`);
console.log(`added per content chunk: ${((g - p) / chunks).toFixed(2)} µs`);
await server.stop(0);
await Deno.remove(dataDir, { recursive: true });
