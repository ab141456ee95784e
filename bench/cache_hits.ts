/**
 * What the response cache costs and saves per request, in-process (no sockets), on this tree:
 *
 *   deno run -A bench/cache_hits.ts [--quick] [--rounds 10] [--batch 500] [--concurrency 32]
 *     [--conc-requests 2000] [--warmup 1000] [--delay-ms 20] [--delay-rounds 3] [--delay-batch 50]
 *     [--delay-conc-requests 640]
 *
 * One gateway is started the way `bench/hot_path_bench.ts` starts one (a fake runtime capturing the handler,
 * `fetch` answering from memory) with `bench/config_cache.yaml`: `bench-chat` (no cache) and `bench-cached`
 * (`cache: {}`) on the same target. Cases, JSON and streamed: the uncached alias; the cached alias with every
 * request unique (a miss: key hashing, lookup, single-flight, fill on top of the upstream call); the cached
 * alias with one request repeated (a hit: no upstream call, the answer replayed). Uncached and miss requests
 * carry a counter so their bodies are the same size as the hit's.
 *
 * Each round runs a sequential batch of every case, the order rotated each round so drift on a busy machine
 * falls on all cases alike; then each case at `--concurrency` clients. Printed per case: latency p50 and p99
 * (sequential, so no queueing; each sample is handler call to whole body read), requests/s sequential and
 * concurrent, and the p50/p99 seen at that concurrency. With `--delay-ms` > 0 a second, smaller phase gives
 * the fake upstream that delay, to show what a hit saves against a real call (0 skips it).
 *
 * Every answer is checked, so the bench cannot silently measure the wrong path: status 200, `x-cache`
 * (absent on the uncached alias, `MISS` on unique requests, `HIT` on the repeated one), a stream's `[DONE]`,
 * and the upstream calls each batch made (one per request, none for hits).
 *
 * @module
 */
import { parseConfigText } from "../lib/config/load.ts";
import { createProviders } from "../lib/providers/registry.ts";
import { startServer } from "../lib/serve.ts";
import { capturingRuntime } from "./harness/capturing_runtime.ts";

const TOKEN = "gw-bench-token-0123456789abcdef";
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
const CHUNK =
  '{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model",';
/** The same answer streamed: a role chunk, the text in six pieces, the finish, usage, `[DONE]`. */
const SSE = [
  `${CHUNK}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
  ...["Hello!", " How", " can", " I", " help you", " today?"].map((text) =>
    `${CHUNK}"choices":[{"index":0,"delta":{"content":${JSON.stringify(text)}},"finish_reason":null}]}`
  ),
  `${CHUNK}"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
  `${CHUNK}"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":9,"total_tokens":21}}`,
  "[DONE]",
].map((data) => `data: ${data}\n\n`).join("");

/** Sizes; the defaults finish in about two minutes on an idle 2-core machine, `--quick` in seconds. */
interface Options {
  rounds: number;
  batch: number;
  concurrency: number;
  concRequests: number;
  warmup: number;
  delayMs: number;
  delayRounds: number;
  delayBatch: number;
  delayConcRequests: number;
}

const DEFAULTS: Options = {
  rounds: 10,
  batch: 500,
  concurrency: 32,
  concRequests: 2_000,
  warmup: 1_000,
  delayMs: 20,
  delayRounds: 3,
  delayBatch: 50,
  delayConcRequests: 640,
};
const QUICK: Options = {
  ...DEFAULTS,
  rounds: 2,
  batch: 100,
  concRequests: 320,
  warmup: 200,
  delayRounds: 1,
  delayBatch: 10,
  delayConcRequests: 64,
};

/** `--quick` first, then any `--name value` over it (kebab-case of the option). */
function parseOptions(args: readonly string[]): Options {
  const options: Options = { ...(args.includes("--quick") ? QUICK : DEFAULTS) };
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--quick") continue;
    const key = args[i].replace(/^--/, "").replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
    const value = Number(args[i + 1]);
    if (!(key in options) || !Number.isInteger(value) || value < 0) {
      throw new Error(`bad argument ${args[i]} ${args[i + 1] ?? ""} (see the usage at the top of the file)`);
    }
    options[key as keyof Options] = value;
    i++;
  }
  return options;
}

/** One measured path: which alias, JSON or SSE, unique or repeated, and the `x-cache` it must answer. */
interface Case {
  name: string;
  alias: "bench-chat" | "bench-cached";
  stream: boolean;
  unique: boolean;
  expect: "HIT" | "MISS" | null;
}

const CASES: readonly Case[] = [false, true].flatMap((stream) => {
  const shape = stream ? "stream" : "JSON";
  return [
    { name: `uncached, ${shape}`, alias: "bench-chat", stream, unique: true, expect: null },
    { name: `cached miss, ${shape}`, alias: "bench-cached", stream, unique: true, expect: "MISS" },
    { name: `cached hit, ${shape}`, alias: "bench-cached", stream, unique: false, expect: "HIT" },
  ];
});

let upstreamDelayMs = 0;
let upstreamCalls = 0;
const answer = (body: BodyInit | null | undefined) =>
  typeof body === "string" && body.includes('"stream":true')
    ? new Response(SSE, { headers: { "content-type": "text/event-stream" } })
    : new Response(COMPLETION, { headers: { "content-type": "application/json" } });
// The upstream answers from memory (after `upstreamDelayMs`, when set): what is measured is the gateway.
globalThis.fetch = (_input: RequestInfo | URL, init?: RequestInit) => {
  upstreamCalls++;
  if (upstreamDelayMs <= 0) return Promise.resolve(answer(init?.body));
  return new Promise((done) => setTimeout(() => done(answer(init?.body)), upstreamDelayMs));
};

/** Starts the gateway on bench/config_cache.yaml; returns its handler and the temp dir to remove. */
async function startGateway(): Promise<
  { handler: (request: Request) => Promise<Response>; dataDir: string }
> {
  const dataDir = await Deno.makeTempDir({ prefix: "gateway-cache-hits-" });
  const env = { BENCH_UPSTREAM_URL: "http://upstream.invalid", BENCH_DATA_DIR: dataDir, BENCH_TOKEN: TOKEN };
  const source = new URL("./config_cache.yaml", import.meta.url);
  const loaded = parseConfigText(await Deno.readTextFile(source), { source: source.pathname, env });
  if (!loaded.ok) throw new Error(`bench/config_cache.yaml: ${JSON.stringify(loaded.issues)}`);
  const captured = capturingRuntime(env);
  const runtime = captured.runtime;
  await startServer(runtime, {
    config: loaded.config,
    providers: createProviders(loaded.config.providers, env),
  });
  return { handler: captured.handler(), dataDir };
}

const { handler: gateway, dataDir } = await startGateway();
let counter = 0;

/**
 * The body of the next request of `c`: a fresh counter, or the fixed one its hits repeat (the same length;
 * one per shape, as `stream` is not in the key and the streamed hit should replay an entry a stream filled).
 */
function bodyOf(c: Case): string {
  const tag = c.unique ? String(++counter).padStart(9, "0") : c.stream ? "hit-sse--" : "hit-json-";
  return JSON.stringify({
    model: c.alias,
    messages: [{ role: "user", content: `Hello, gateway! This is a benchmark request. #${tag}` }],
    ...(c.stream ? { stream: true } : {}),
  });
}

/** One request of `c`, checked; returns its latency in µs (handler call to whole body read). */
async function one(c: Case): Promise<number> {
  const body = bodyOf(c);
  const start = performance.now();
  const response = await gateway(
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body,
    }),
  );
  const text = await response.text();
  const us = (performance.now() - start) * 1000;
  const xCache = response.headers.get("x-cache");
  if (response.status !== 200 || xCache !== c.expect || (c.stream && !text.endsWith("data: [DONE]\n\n"))) {
    throw new Error(`${c.name}: status ${response.status}, x-cache ${xCache} (want ${c.expect}): ${text}`);
  }
  return us;
}

/** `n` requests of `c` over `clients` concurrent loops; latencies go to `samples`; returns requests/s. */
async function run(c: Case, n: number, clients: number, samples: number[]): Promise<number> {
  const calls = upstreamCalls;
  let left = n;
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(clients, n) }, async () => {
    while (left-- > 0) samples.push(await one(c));
  }));
  const rps = n / ((performance.now() - start) / 1000);
  const made = upstreamCalls - calls;
  if (made !== (c.expect === "HIT" ? 0 : n)) throw new Error(`${c.name}: ${made} upstream calls for ${n}`);
  return rps;
}

/** Per case: sequential and concurrent latencies, and each round's requests/s. */
interface Tally {
  seq: number[];
  seqRps: number[];
  conc: number[];
  concRps: number[];
}

/** Rounds of every case, sequential then concurrent, the case order rotated each round. */
async function phase(
  cases: readonly Case[],
  rounds: number,
  batch: number,
  concurrency: number,
  concRequests: number,
): Promise<Map<Case, Tally>> {
  const tallies = new Map(cases.map((c) => [c, { seq: [], seqRps: [], conc: [], concRps: [] } as Tally]));
  for (let r = 0; r < rounds; r++) {
    const order = cases.map((_, i) => cases[(i + r) % cases.length]);
    for (const c of order) tallies.get(c)!.seqRps.push(await run(c, batch, 1, tallies.get(c)!.seq));
    for (const c of order) {
      tallies.get(c)!.concRps.push(await run(c, concRequests, concurrency, tallies.get(c)!.conc));
    }
  }
  return tallies;
}

/** Nearest-rank percentile. */
function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const median = (xs: readonly number[]) => percentile(xs, 50);
const num = (x: number) => Math.round(x).toLocaleString("en-US");

/** A Markdown table of a phase: latencies in µs, throughput the median over rounds. */
function table(tallies: Map<Case, Tally>, concurrency: number): string {
  const head = [
    "case",
    "p50 µs",
    "p99 µs",
    "req/s (1 client)",
    `req/s (${concurrency} clients)`,
    `p50 µs (${concurrency})`,
    `p99 µs (${concurrency})`,
  ];
  const rows = [...tallies].map(([c, t]) => [
    c.name,
    num(percentile(t.seq, 50)),
    num(percentile(t.seq, 99)),
    num(median(t.seqRps)),
    num(median(t.concRps)),
    num(percentile(t.conc, 50)),
    num(percentile(t.conc, 99)),
  ]);
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map(line)].join("\n");
}

/** Hit and miss p50 against the uncached alias of the same shape: what the cache adds or takes off. */
function deltas(tallies: Map<Case, Tally>): string {
  const byName = new Map([...tallies].map(([c, t]) => [c.name, t]));
  const lines: string[] = [];
  for (const shape of ["JSON", "stream"]) {
    const base = byName.get(`uncached, ${shape}`);
    if (!base) continue;
    for (const kind of ["cached miss", "cached hit"]) {
      const t = byName.get(`${kind}, ${shape}`);
      if (!t) continue;
      const d50 = percentile(t.seq, 50) - percentile(base.seq, 50);
      const d99 = percentile(t.seq, 99) - percentile(base.seq, 99);
      lines.push(
        `- ${kind}, ${shape} − uncached: p50 ${d50 >= 0 ? "+" : ""}${num(d50)} µs, p99 ` +
          `${d99 >= 0 ? "+" : ""}${num(d99)} µs`,
      );
    }
  }
  return lines.join("\n");
}

if (import.meta.main) {
  const o = parseOptions(Deno.args);
  const load = await Deno.readTextFile("/proc/loadavg").then(
    (s) => s.split(" ").slice(0, 3).join(" "),
    () => "n/a",
  );
  console.log(`Deno ${Deno.version.deno}, V8 ${Deno.version.v8}; load average at start ${load}`);
  console.log(`options: ${JSON.stringify(o)}`);
  // Fill the repeated requests' entries (one MISS each), then warm every case, interleaved.
  for (const c of CASES.filter((c) => !c.unique)) await run({ ...c, expect: "MISS" }, 1, 1, []);
  for (let i = 0; i < 2; i++) for (const c of CASES) await run(c, Math.ceil(o.warmup / 2), 1, []);

  const instant = await phase(CASES, o.rounds, o.batch, o.concurrency, o.concRequests);
  console.log(
    `\n### Upstream answers at once (${o.rounds} rounds × ${o.batch} sequential + ` +
      `${o.concRequests} at ${o.concurrency} clients per case)\n`,
  );
  console.log(table(instant, o.concurrency));
  console.log(`\n${deltas(instant)}`);

  if (o.delayMs > 0) {
    upstreamDelayMs = o.delayMs;
    const json = CASES.filter((c) => !c.stream);
    const delayed = await phase(json, o.delayRounds, o.delayBatch, o.concurrency, o.delayConcRequests);
    console.log(
      `\n### Upstream answers after ${o.delayMs} ms (${o.delayRounds} rounds × ${o.delayBatch} ` +
        `sequential + ${o.delayConcRequests} at ${o.concurrency} clients per case)\n`,
    );
    console.log(table(delayed, o.concurrency));
  }
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  // The gateway's usage worker and timers would keep the process alive; what was measured is printed.
  Deno.exit(0);
}
