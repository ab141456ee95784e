/**
 * What OpenTelemetry tracing costs per request, in-process (no sockets to the gateway), on this tree:
 *
 *   deno run -A bench/telemetry_cost.ts [--quick] [--rounds 20] [--batch 2000] [--warmup 2000]
 *     [--interval-ms 10] [--max-queue 4096] [--capture 1] [--drain-s 30]
 *
 * Gateways of this tree are started in one process the way `bench/hot_path_ab.ts` starts one (a fake runtime
 * capturing the handler, `fetch` answering from memory), each from `bench/config.yaml` (auth, a glob grant,
 * access log, SQLite usage; `server.public_metrics` added so `/metrics` can be read back):
 *
 * - `off`: no `telemetry:` block (and no `OTEL_*` variable: the fake runtime's environment has none);
 * - `on`: `telemetry: { otlp: { endpoint: <sink>, interval, max_queue }, capture_content: false }`;
 * - `on, capture`: the same with `capture_content: true` (`--capture 0` leaves it out).
 *
 * The sink (`bench/otlp_sink.ts`) is a `Deno.serve` on 127.0.0.1 in a Worker of this process: it reads and
 * discards each body, counts the spans in it and answers 200 with an empty protobuf body. The gateway's
 * upstream calls go through the patched global `fetch`; the OTLP exporters use `node:http`, which does not, so
 * spans really travel over loopback to the sink (the bench checks that they arrive).
 *
 * Each round runs a sequential batch of `--batch` requests per gateway, JSON then streamed, the gateways'
 * order flipped every round (rotated, and reversed on odd rounds) so drift on a busy machine falls on all
 * alike. Printed per shape and gateway: the median over rounds of µs/request (a batch's wall time / its
 * requests, each answer read to its end and checked), and each traced gateway minus `off`, both as the
 * difference of the medians and as the median of the per-round differences (each traced batch against the
 * `off` batch beside it in time). That difference is what tracing one request costs: its four spans (server,
 * gateway, GenAI, upstream attempt), the GenAI metrics, and the export (protobuf encoding, the HTTP request),
 * which runs on the gateway's thread on a timer. Every request is followed by one turn of the event loop (see
 * {@linkcode one}), so those timers and sockets run during the batches as they would in a server.
 *
 * Why `--interval-ms` is 10 here and not the config's default 1 s: the span queue sends at most one batch of
 * 512 spans per interval, so past 128 requests per interval (a second, by default) a gateway's queue fills and
 * every further span is dropped (and counted), never encoded or sent: at this bench's thousands of requests a
 * second, 1 s would measure mostly dropping, not exporting. At 10 ms the queue keeps up (nothing is dropped)
 * and each export lands in the traced gateway's own batch; a long interval also lets part of the export work
 * fall in the `off` batches. At the end the bench waits for the queues to drain (`--drain-s`), prints what the
 * sink received and each gateway's `gateway_telemetry_dropped_total` (a warning when not 0), and fails if no
 * span arrived.
 *
 * @module
 */
import { parseConfigText } from "../lib/config/load.ts";
import { createProviders } from "../lib/providers/registry.ts";
import { startServer } from "../lib/serve.ts";
import { setImmediate } from "node:timers";
import { type SinkCounts, startSink } from "./otlp_sink.ts";
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
const BODIES = {
  JSON: JSON.stringify({
    model: "bench-chat",
    messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
  }),
  stream: JSON.stringify({
    model: "bench-chat",
    messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
    stream: true,
  }),
};
type Shape = keyof typeof BODIES;
const SHAPES: readonly Shape[] = ["JSON", "stream"];
/** Spans one traced request makes: server, gateway, GenAI, one upstream attempt. */
const SPANS_PER_REQUEST = 4;

/** Sizes; the defaults finish in about a minute and a half on an idle 2-core machine, `--quick` in seconds. */
interface Options {
  rounds: number;
  batch: number;
  warmup: number;
  intervalMs: number;
  maxQueue: number;
  capture: number;
  drainS: number;
}

const DEFAULTS: Options = {
  rounds: 20,
  batch: 2_000,
  warmup: 2_000,
  intervalMs: 10,
  maxQueue: 4_096,
  capture: 1,
  drainS: 30,
};
const QUICK: Options = { ...DEFAULTS, rounds: 2, batch: 300, warmup: 300, drainS: 15 };

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
  if (options.rounds < 1 || options.batch < 1 || options.intervalMs < 1 || options.maxQueue < 1) {
    throw new Error("--rounds, --batch, --interval-ms and --max-queue must be at least 1");
  }
  return options;
}

// The upstream answers from memory: what is measured is the gateway. (The OTLP exporters do not use `fetch`.)
let upstreamCalls = 0;
globalThis.fetch = (_input: RequestInfo | URL, init?: RequestInit) => {
  upstreamCalls++;
  const body = init?.body;
  return Promise.resolve(
    typeof body === "string" && body.includes('"stream":true')
      ? new Response(SSE, { headers: { "content-type": "text/event-stream" } })
      : new Response(COMPLETION, { headers: { "content-type": "application/json" } }),
  );
};

/** A started gateway. */
interface Gateway {
  label: string;
  traced: boolean;
  handler: (request: Request) => Promise<Response>;
  dataDir: string;
  /** Requests sent to it, warm-up included. */
  sent: number;
}

/** `bench/config.yaml` with `/metrics` public and, when given, a `telemetry:` block. */
async function configText(telemetry: string | null): Promise<string> {
  const text = await Deno.readTextFile(new URL("./config.yaml", import.meta.url));
  const anchor = "  shutdown_timeout: 1s\n";
  if (!text.includes(anchor) || /^telemetry:/m.test(text)) {
    throw new Error("bench/config.yaml changed: its server block or a telemetry block; update this bench");
  }
  return text.replace(anchor, `${anchor}  public_metrics: true\n`) + (telemetry ? `\n${telemetry}` : "");
}

/** Starts a gateway of this tree from `text` (bench/config.yaml's placeholders filled). */
async function startGateway(label: string, text: string): Promise<Gateway> {
  const dataDir = await Deno.makeTempDir({ prefix: "gateway-telemetry-cost-" });
  const env = { BENCH_UPSTREAM_URL: "http://upstream.invalid", BENCH_DATA_DIR: dataDir, BENCH_TOKEN: TOKEN };
  const source = new URL("./config.yaml", import.meta.url).pathname;
  const loaded = parseConfigText(text, { source, env });
  if (!loaded.ok) throw new Error(`${label}: ${JSON.stringify(loaded.issues)}`);
  const captured = capturingRuntime(env);
  const runtime = captured.runtime;
  await startServer(runtime, {
    config: loaded.config,
    providers: createProviders(loaded.config.providers, env),
  });
  return { label, traced: loaded.config.telemetry !== null, handler: captured.handler(), dataDir, sent: 0 };
}

/**
 * One request of `shape` through `g`, its answer read to the end and checked, then one turn of the event loop.
 * With `fetch` answering from memory a request is all microtasks: without the turn, a batch would never let a
 * timer fire or a socket be read, and the exporters (timers, `node:http`) would not run until the batch ends,
 * which a real server, woken by a socket for every request, does not do. The turn (`setImmediate`, about 1 µs)
 * is paid by every gateway alike.
 */
async function one(g: Gateway, shape: Shape): Promise<void> {
  g.sent++;
  const response = await g.handler(
    new Request("http://gateway.test/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
      body: BODIES[shape],
    }),
  );
  const text = await response.text();
  if (response.status !== 200 || (shape === "stream" && !text.endsWith("data: [DONE]\n\n"))) {
    throw new Error(`${g.label}, ${shape}: status ${response.status}: ${text.slice(0, 500)}`);
  }
  await new Promise((resolve) => setImmediate(resolve));
}

/** µs per request over `n` sequential requests; checks that each made one upstream call. */
async function batchOf(g: Gateway, shape: Shape, n: number): Promise<number> {
  const calls = upstreamCalls;
  const start = performance.now();
  for (let i = 0; i < n; i++) await one(g, shape);
  const us = ((performance.now() - start) / n) * 1000;
  if (upstreamCalls - calls !== n) {
    throw new Error(`${g.label}: ${upstreamCalls - calls} upstream calls for ${n}`);
  }
  return us;
}

/** `gateway_telemetry_dropped_total` by signal, from the gateway's own `/metrics` (empty when off). */
async function dropped(g: Gateway): Promise<{ traces: number; metrics: number }> {
  const response = await g.handler(new Request("http://gateway.test/metrics"));
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${g.label}: /metrics answered ${response.status}`);
  const read = (signal: string) => {
    const m = new RegExp(`^gateway_telemetry_dropped_total\\{signal="${signal}"\\} (\\S+)$`, "m").exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { traces: read("traces"), metrics: read("metrics") };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fixed = (x: number) => x.toFixed(1);
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x).toFixed(1)}`;

/** A Markdown table: per shape, each gateway's median µs/request and each traced one's cost over `off`. */
function table(gateways: readonly Gateway[], samples: Map<string, number[]>): string {
  const [off, ...traced] = gateways;
  const head = [
    "shape",
    ...gateways.map((g) => `${g.label} µs/req`),
    ...traced.flatMap((g) => [`${g.label} − off (medians)`, `${g.label} − off (per round)`]),
  ];
  const rows = SHAPES.map((shape) => {
    const of = (g: Gateway) => samples.get(`${g.label}|${shape}`)!;
    const base = of(off);
    return [
      shape,
      ...gateways.map((g) => fixed(median(of(g)))),
      ...traced.flatMap((g) => [
        `${signed(median(of(g)) - median(base))} µs (×${(median(of(g)) / median(base)).toFixed(2)})`,
        `${signed(median(of(g).map((x, i) => x - base[i])))} µs`,
      ]),
    ];
  });
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map((_, i) => (i === 0 ? "---" : "---:"))), ...rows.map(line)].join("\n");
}

if (import.meta.main) {
  const o = parseOptions(Deno.args);
  const load = await Deno.readTextFile("/proc/loadavg").then(
    (s) => s.split(" ").slice(0, 3).join(" "),
    () => "n/a",
  );
  console.log(`Deno ${Deno.version.deno}, V8 ${Deno.version.v8}; load average at start ${load}`);
  console.log(`options: ${JSON.stringify(o)}`);

  const sink = await startSink();
  const block = (capture: boolean) =>
    [
      "telemetry:",
      "  otlp:",
      `    endpoint: http://127.0.0.1:${sink.port}`,
      `    interval: ${o.intervalMs}ms`,
      `    max_queue: ${o.maxQueue}`,
      `  capture_content: ${capture}`,
      "",
    ].join("\n");
  const gateways = [
    await startGateway("off", await configText(null)),
    await startGateway("on", await configText(block(false))),
    ...(o.capture ? [await startGateway("on, capture", await configText(block(true)))] : []),
  ];
  if (gateways.map((g) => g.traced).join() !== [false, true, true].slice(0, gateways.length).join()) {
    throw new Error("the off gateway is traced or a traced one is not (an OTEL_* variable?)");
  }

  // Warm every gateway and shape, interleaved, until the JIT has settled on all paths.
  for (let i = 0; i < 2; i++) {
    for (const shape of SHAPES) for (const g of gateways) await batchOf(g, shape, Math.ceil(o.warmup / 2));
  }
  const samples = new Map<string, number[]>(
    gateways.flatMap((g) => SHAPES.map((shape) => [`${g.label}|${shape}`, []] as [string, number[]])),
  );
  const started = performance.now();
  for (let r = 0; r < o.rounds; r++) {
    const rotated = gateways.map((_, i) => gateways[(i + r) % gateways.length]);
    const order = r % 2 ? rotated.reverse() : rotated;
    for (const shape of SHAPES) {
      for (const g of order) samples.get(`${g.label}|${shape}`)!.push(await batchOf(g, shape, o.batch));
    }
  }
  const seconds = (performance.now() - started) / 1000;

  console.log(
    `\n### Telemetry off and on (${o.rounds} rounds × ${o.batch} sequential requests per gateway and shape, ` +
      `${seconds.toFixed(0)} s; OTLP interval ${o.intervalMs} ms, max_queue ${o.maxQueue})\n`,
  );
  console.log(table(gateways, samples));
  console.log(`\nPer round, µs/request:`);
  for (const [key, xs] of samples) console.log(`- ${key.replace("|", ", ")}: ${xs.map(fixed).join(" ")}`);

  // Let the queues drain: wait until the sink has every span, or its count has stopped growing for three
  // intervals (what is still queued then is not coming), or time runs out; then read the dropped counters.
  const traced = gateways.filter((g) => g.traced);
  const expected = traced.reduce((n, g) => n + g.sent * SPANS_PER_REQUEST, 0);
  const drainStart = performance.now();
  let counts: SinkCounts = await sink.counts();
  let still = performance.now();
  while (counts.spans < expected && performance.now() - drainStart < o.drainS * 1000) {
    if (performance.now() - still > 3 * Math.max(o.intervalMs, 250)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
    const next = await sink.counts();
    if (next.spans !== counts.spans) still = performance.now();
    counts = next;
  }
  const drainedS = (performance.now() - drainStart) / 1000;
  const drops = await Promise.all(traced.map(dropped));
  const lost = () => drops.reduce((n, d) => n + d.traces, 0);
  const offDrops = await dropped(gateways[0]);
  console.log(
    `\nSink: ${counts.spans.toLocaleString("en-US")} spans in ${counts.traceRequests} trace exports, ` +
      `${counts.metricRequests} metric exports, ${counts.other} other requests, ` +
      `${(counts.bytes / 1e6).toFixed(1)} MB (after ${drainedS.toFixed(1)} s of draining).`,
  );
  console.log(
    `Traced requests: ${traced.map((g) => `${g.label} ${g.sent.toLocaleString("en-US")}`).join(", ")}; ` +
      `spans expected ${expected.toLocaleString("en-US")} (${SPANS_PER_REQUEST} each), received + dropped ` +
      `${(counts.spans + lost()).toLocaleString("en-US")} (a /metrics read adds its own).`,
  );
  console.log(
    `gateway_telemetry_dropped_total: ${
      traced.map((g, i) => `${g.label} traces ${drops[i].traces}, metrics ${drops[i].metrics}`).join("; ")
    }; off: ${offDrops.traces + offDrops.metrics === 0 ? "no series" : JSON.stringify(offDrops)}.`,
  );
  if (lost() > 0) {
    console.log(
      `WARNING: ${lost().toLocaleString("en-US")} spans dropped (${
        ((lost() / expected) * 100).toFixed(1)
      }% of them): the traced rows do not pay for exporting those. The queue sends at most 512 spans per ` +
        `interval (--interval-ms ${o.intervalMs}); a shorter interval keeps up.`,
    );
  }
  sink.stop();
  for (const g of gateways) await Deno.remove(g.dataDir, { recursive: true }).catch(() => {});
  if (counts.spans === 0 || counts.traceRequests === 0) {
    console.error("FAIL: no span reached the sink");
    Deno.exit(1);
  }
  // The gateways' usage workers, telemetry and timers would keep the process alive; what was measured is printed.
  Deno.exit(0);
}
