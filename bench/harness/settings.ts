/**
 * The bench's settings: its flags, where things are, the plan of one run (`--quick` shrinks every phase), the
 * CPU layout and the targets; plus the two facts learned while running (where Bun is, where the fake
 * upstream listens), which the servers and phases read.
 *
 * @module
 */
import { parseArgs } from "node:util";

export const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    quick: { type: "boolean", default: false },
    root: { type: "string" },
    out: { type: "string" },
    "no-pin": { type: "boolean", default: false },
    "skip-bun": { type: "boolean", default: false },
    "no-install": { type: "boolean", default: false },
    shared: { type: "boolean", default: false },
    phases: { type: "string" },
    ratios: { type: "string" },
    compare: { type: "string" },
  },
});

const BENCH_URL = new URL("../", import.meta.url);
export const BENCH_DIR = decodeURIComponent(BENCH_URL.pathname).replace(/\/$/, "");
export const ROOT = (flags.root ?? decodeURIComponent(new URL("..", BENCH_URL).pathname)).replace(/\/$/, "");
/**
 * `--compare FILE`: the regression guard. Runs the quick throughput phase (unless `--phases` says otherwise),
 * compares its ratios with FILE (a `ratios.json` written by an earlier run) and exits 1 when one regressed
 * beyond the noise (bench/harness/ratios.ts). It writes no report unless `--out` is given, and its ratios to
 * `--ratios FILE` or else `/tmp/gateway-bench-ratios.json`, so the baseline and RESULTS.md stay as they were.
 */
export const COMPARE = flags.compare;
export const OUT = flags.out ?? (COMPARE ? undefined : `${BENCH_DIR}/RESULTS.md`);
/** Where this run's ratios go: `--ratios`, else beside the report (`bench/ratios.json` by default). */
export const RATIOS_OUT = flags.ratios ??
  (OUT ? `${OUT.slice(0, OUT.lastIndexOf("/")) || "."}/ratios.json` : "/tmp/gateway-bench-ratios.json");
export const PIN = !flags["no-pin"];
export const QUICK = flags.quick || COMPARE !== undefined;
/**
 * `--shared`: besides the default rows, the gateway again with the bench token limited and budgeted, once on the
 * embedded state (`bench/config_limited.yaml`) and once with Redis counters and PostgreSQL records
 * (`bench/config_shared.yaml`), so the shared stores' cost reads off one run, against the same limits.
 */
export const SHARED = flags.shared;
export const PHASES = new Set(
  (flags.phases ?? (COMPARE ? "throughput" : "throughput,latency,streams,memory,cold")).split(","),
);
export const BUN_VERSION = "1.4.5";
export const TOKEN = "gw-bench-token-0123456789abcdef";
export const CHAT_BODY = JSON.stringify({
  model: "bench-chat",
  messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
});

/**
 * Knobs of one run; `--quick` shrinks every phase. Quick throughput runs 4 short rounds rather than one long
 * one: the regression guard's noise is the spread of the per-round ratios (bench/harness/ratios.ts).
 */
export const PLAN = QUICK
  ? {
    rounds: 4,
    wrkSeconds: 3,
    warmSeconds: 2,
    latencySeconds: 5,
    streams: { streams: 120, concurrency: 10, chunks: 20, interval: 10, warmup: 20 },
    holds: [5000],
    coldRuns: 3,
  }
  : {
    rounds: 3,
    wrkSeconds: 10,
    warmSeconds: 3,
    latencySeconds: 10,
    streams: { streams: 400, concurrency: 20, chunks: 20, interval: 10, warmup: 40 },
    holds: [1000, 5000],
    coldRuns: 7,
  };
/** wrk's connections in the throughput phase. */
export const WRK_CONNECTIONS = 50;
export const LATENCY_RPS = 1000;
export const LATENCY_PROCESSES = 5;
export const LOADGEN_CPU = "0";
export const SUT_CPU = "1";

/**
 * The targets the report judges against: issue 28's where it set one (the ratio to the bare proxy, added p99
 * at 1,000 RPS and memory per stream per runtime, added TTFC p99, cold start), the first benchmark issue's for
 * the rest (added p50, CPU per request, chunk delay).
 */
export const TARGETS = {
  throughputRatio: 0.5,
  addedP50Ms: 0.3,
  addedP99Ms: { deno: 2, bun: 1 } as Record<string, number>,
  cpuUs: { deno: 70, bun: 40 } as Record<string, number>,
  ttfcAddedP99Ms: 2,
  chunkAddedP99Ms: 0.5,
  kbPerStream: { deno: 100, bun: 40 } as Record<string, number>,
  coldStartMs: 100,
};

export const BINARY = `${ROOT}/dist/gateway`;

/** Learned during the run: Bun's path (undefined when unavailable or skipped) and the fake upstream's URL. */
export const state: { bun: string | undefined; upstreamUrl: string } = { bun: undefined, upstreamUrl: "" };
