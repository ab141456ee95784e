/**
 * `deno task bench`: the gateway's benchmark, side by side with a fake upstream measured directly and a bare
 * fetch-and-forward proxy on each runtime, written to `bench/RESULTS.md` (and the raw numbers to
 * `bench/RESULTS.json`).
 *
 * Targets: `direct` (the fake upstream itself), `bare-deno`, `bare-bun` (bench/bare_proxy.ts), `gw-deno`
 * (`deno run -A main.ts serve`) and `gw-bun` (the Bun single binary `dist/gateway`, built when missing or
 * older than the sources). A target that cannot start is reported as such in every table.
 *
 * Layout on the 2-core box (`--no-pin` turns it off): the server under test runs on CPU 1; the load generator,
 * the fake upstream and the stream probe share CPU 0. For the `direct` rows the upstream is moved to CPU 1
 * while it is measured, so every server under test gets the same core.
 *
 * Phases: throughput (wrk, interleaved rounds, median) with CPU per request from /proc/<pid>/stat; latency at
 * a fixed 1,000 RPS (five h2load processes, one connection each, at 200 RPS: independent timers, so no
 * synchronised bursts); stream timing and chunk integrity (bench/stream_probe.ts); memory per open stream
 * (fresh server, N held streams, VmRSS); cold start of the binary to its first 200.
 *
 * Flags: `--quick` (~2 min), `--root DIR` (gateway checkout, default the repo), `--out FILE`, `--no-pin`,
 * `--skip-bun`, `--no-install`.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { HoldResult, Summary, TimingResult } from "./stream_probe.ts";
import { summarize } from "./stream_probe.ts";

// ---------------------------------------------------------------------------------------------- settings

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    quick: { type: "boolean", default: false },
    root: { type: "string" },
    out: { type: "string" },
    "no-pin": { type: "boolean", default: false },
    "skip-bun": { type: "boolean", default: false },
    "no-install": { type: "boolean", default: false },
    phases: { type: "string", default: "throughput,latency,streams,memory,cold" },
  },
});

const BENCH_DIR = decodeURIComponent(new URL(".", import.meta.url).pathname).replace(/\/$/, "");
const ROOT = (flags.root ?? decodeURIComponent(new URL("..", import.meta.url).pathname)).replace(/\/$/, "");
const OUT = flags.out ?? `${BENCH_DIR}/RESULTS.md`;
const PIN = !flags["no-pin"];
const QUICK = flags.quick;
const PHASES = new Set(flags.phases.split(","));
const BUN_VERSION = "1.4.5";
const TOKEN = "gw-bench-token-0123456789abcdef";
const CHAT_BODY = JSON.stringify({
  model: "bench-chat",
  messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
});

/** Knobs of one run; `--quick` shrinks every phase. */
const PLAN = QUICK
  ? {
    rounds: 1,
    wrkSeconds: 5,
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
const LATENCY_RPS = 1000;
const LATENCY_PROCESSES = 5;
const LOADGEN_CPU = "0";
const SUT_CPU = "1";

/** The issue's targets. */
const TARGETS = {
  throughputRatio: 0.8,
  addedP50Ms: 0.3,
  addedP99Ms: 1,
  cpuUs: { deno: 70, bun: 40 } as Record<string, number>,
  ttfcAddedP99Ms: 1,
  chunkAddedP99Ms: 0.5,
  kbPerStream: 40,
  coldStartMs: 100,
};

// ---------------------------------------------------------------------------------------------- helpers

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const decoder = new TextDecoder();
const round = (x: number, digits = 2) =>
  Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : NaN;
const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const log = (msg: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

/** Output of a finished command. */
interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(
  argv: string[],
  options: { timeoutMs?: number; cwd?: string } = {},
): Promise<CommandResult> {
  try {
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd: options.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(options.timeoutMs ?? 600_000),
    }).output();
    return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
  } catch (err) {
    return { code: -1, stdout: "", stderr: err instanceof Error ? err.message : String(err) };
  }
}

const pinned = (cpu: string, argv: string[]) => PIN ? ["taskset", "-c", cpu, ...argv] : argv;

async function which(cmd: string): Promise<boolean> {
  return (await run(["sh", "-c", `command -v ${cmd}`])).code === 0;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** utime + stime of a process, in microseconds. */
async function cpuMicros(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * (1_000_000 / CLK_TCK);
}

/** Resident set size of a process, in KiB. */
async function rssKiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
}

/** Share of the whole machine that was busy over `ms` (all cores), from /proc/stat. */
async function machineBusy(ms: number): Promise<number> {
  const read = async () => {
    const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1).map(
      Number,
    );
    const idle = line[3] + line[4];
    return { idle, total: line.reduce((a, b) => a + b, 0) };
  };
  const a = await read();
  await sleep(ms);
  const b = await read();
  return 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
}

const CLK_TCK = Number((await run(["getconf", "CLK_TCK"])).stdout.trim()) || 100;
const TMP = await Deno.makeTempDir({ prefix: "gateway-bench-" });

// ---------------------------------------------------------------------------------------------- servers

/** A server process started by the bench. */
interface Server {
  name: string;
  pid: number;
  base: string;
  logFile: string;
  exited: boolean;
  stop(): Promise<void>;
}

/** Starts `argv` as its own process (pinned to `cpu`), stdout and stderr into a log file; the pid is the server's. */
function spawnServer(
  name: string,
  argv: string[],
  port: number,
  options: { cpu: string; env?: Record<string, string>; cwd?: string },
): Server {
  const logFile = `${TMP}/${name}.log`;
  const pin = PIN ? `taskset -c ${options.cpu} ` : "";
  const script = `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${pin}${argv.map(shq).join(" ")} >${
    shq(logFile)
  } 2>&1`;
  const child = new Deno.Command("sh", {
    args: ["-c", script],
    cwd: options.cwd ?? ROOT,
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const server: Server = {
    name,
    pid: child.pid,
    base: `http://127.0.0.1:${port}`,
    logFile,
    exited: false,
    async stop() {
      if (server.exited) return;
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, 5_000);
      await child.status;
      clearTimeout(timer);
    },
  };
  child.status.then(() => server.exited = true);
  return server;
}

async function logTail(server: Server, lines = 6): Promise<string> {
  try {
    const text = await Deno.readTextFile(server.logFile);
    return text.trim().split("\n").slice(-lines).join(" | ").slice(0, 600);
  } catch {
    return "(no log)";
  }
}

function chatInit(body = CHAT_BODY): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
    body,
  };
}

/** Waits until a chat request through `server` answers 200; throws with the log's tail if it never does. */
async function waitReady(server: Server, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "";
  while (performance.now() < deadline) {
    if (server.exited) throw new Error(`${server.name} exited: ${await logTail(server)}`);
    try {
      const response = await fetch(`${server.base}/v1/chat/completions`, chatInit());
      const text = await response.text();
      if (response.status === 200) return;
      last = `status ${response.status}: ${text.slice(0, 200)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(50);
  }
  throw new Error(`${server.name} not ready after ${timeoutMs} ms (${last}): ${await logTail(server)}`);
}

// ---------------------------------------------------------------------------------------------- targets

/** Something to measure. */
interface Target {
  key: string;
  label: string;
  runtime: "deno" | "bun";
  kind: "upstream" | "bare" | "gateway";
  /** Why it is not measured, when it is not. */
  unavailable?: string;
  /** Starts a fresh instance (not for `direct`). */
  start?: (name: string) => Promise<Server>;
  server?: Server;
}

let upstreamUrl = "";

async function startBare(runtime: "deno" | "bun", name: string): Promise<Server> {
  const port = freePort();
  const script = `${BENCH_DIR}/bare_proxy.ts`;
  const argv = runtime === "bun"
    ? [BUN!, script, "--port", String(port), "--upstream", upstreamUrl]
    : ["deno", "run", "-A", script, "--port", String(port), "--upstream", upstreamUrl];
  // Bun's fetch queues requests beyond 256 in flight (BUN_CONFIG_MAX_HTTP_REQUESTS); the baseline must not.
  const env: Record<string, string> = runtime === "bun" ? { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" } : {};
  const server = spawnServer(name, argv, port, { cpu: SUT_CPU, env });
  await waitReady(server);
  return server;
}

/** Extra `deno run` flags for the Deno gateway (e.g. `--v8-flags=…`), from `BENCH_DENO_FLAGS`. */
const DENO_FLAGS = (Deno.env.get("BENCH_DENO_FLAGS") ?? "").split(" ").filter(Boolean);

async function startGateway(runtime: "deno" | "bun", name: string): Promise<Server> {
  const port = freePort();
  const dataDir = `${TMP}/${name}-data`;
  await Deno.mkdir(dataDir, { recursive: true });
  const config = `${BENCH_DIR}/config.yaml`;
  const argv = runtime === "bun"
    ? [BINARY, "serve", "--config", config, "--port", String(port)]
    : ["deno", "run", "-A", ...DENO_FLAGS, "main.ts", "serve", "--config", config, "--port", String(port)];
  const server = spawnServer(name, argv, port, {
    cpu: SUT_CPU,
    env: {
      BENCH_UPSTREAM_URL: upstreamUrl,
      BENCH_DATA_DIR: dataDir,
      BENCH_TOKEN: TOKEN,
      // As deployed (see the Dockerfile and README): Bun's fetch otherwise queues upstream calls past 256.
      ...(runtime === "bun" ? { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" } : {}),
    },
  });
  try {
    await waitReady(server);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

// ---------------------------------------------------------------------------------------------- tools

let BUN: string | undefined;
const BINARY = `${ROOT}/dist/gateway`;

async function ensureTools(): Promise<void> {
  const missing = [];
  for (const tool of ["wrk", "h2load", ...(PIN ? ["taskset"] : [])]) {
    if (!await which(tool)) missing.push(tool);
  }
  if (missing.length > 0) {
    if (flags["no-install"]) {
      throw new Error(`missing tools: ${missing.join(", ")} (run bench/install_tools.sh)`);
    }
    log(`installing ${missing.join(", ")} with bench/install_tools.sh`);
    const out = await run(["sh", `${BENCH_DIR}/install_tools.sh`], { timeoutMs: 600_000 });
    if (out.code !== 0) throw new Error(`install_tools.sh failed: ${out.stderr.slice(-500)}`);
  }
}

async function findBun(): Promise<string | undefined> {
  if (flags["skip-bun"]) return undefined;
  const out = await run(["npx", "-y", `bun@${BUN_VERSION}`, "-e", "console.log(process.execPath)"], {
    timeoutMs: 180_000,
  });
  const path = out.stdout.trim().split("\n").pop() ?? "";
  return out.code === 0 && path.startsWith("/") ? path : undefined;
}

/** Newest modification time of main.ts and everything under lib/. */
async function sourcesMtime(): Promise<number> {
  let newest = 0;
  const visit = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) await visit(path);
      else newest = Math.max(newest, (await Deno.stat(path)).mtime?.getTime() ?? 0);
    }
  };
  await visit(`${ROOT}/lib`);
  return Math.max(newest, (await Deno.stat(`${ROOT}/main.ts`)).mtime?.getTime() ?? 0);
}

/** What `dist/gateway version` says it runs on ("bun", "deno"), or undefined when it does not run. */
async function binaryRuntime(): Promise<string | undefined> {
  const out = await run([BINARY, "version"], { timeoutMs: 10_000 });
  return out.code === 0 ? /\((\w+)/.exec(out.stdout)?.[1] : undefined;
}

/**
 * Builds `dist/gateway` with Bun when it is missing, not a Bun build (`deno task compile` writes the same
 * path) or older than the sources: with the repo's `compile:bun` task when deno.json has one, else plain
 * `bun build --compile`. Returns why there is no usable binary, if there is none.
 */
async function ensureBinary(): Promise<string | undefined> {
  if (BUN === undefined) {
    return flags["skip-bun"] ? "skipped (--skip-bun)" : `Bun ${BUN_VERSION} unavailable via npx`;
  }
  let binaryMtime = 0;
  try {
    binaryMtime = (await Deno.stat(BINARY)).mtime?.getTime() ?? 0;
  } catch { /* missing */ }
  if (binaryMtime > await sourcesMtime() && await binaryRuntime() === "bun") return undefined;
  const tasks =
    (JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)) as { tasks?: Record<string, string> })
      .tasks ?? {};
  const argv = tasks["compile:bun"] !== undefined
    ? ["deno", "task", "compile:bun"]
    : [BUN, "build", "--compile", "main.ts", "--outfile", "dist/gateway"];
  log(`building dist/gateway: ${argv.join(" ")}`);
  const out = await run(argv, { cwd: ROOT, timeoutMs: 300_000 });
  if (out.code !== 0) {
    const lines = (out.stderr + out.stdout).trim().split("\n");
    const why = lines.filter((l) => /error/i.test(l)).slice(0, 3).join("; ") || lines.slice(-2).join("; ");
    return `${argv.slice(0, 3).join(" ")} failed: ${why.slice(0, 300)}`;
  }
  const runtime = await binaryRuntime();
  return runtime === "bun"
    ? undefined
    : `dist/gateway built but \`dist/gateway version\` reports ${runtime ?? "nothing"}`;
}

// ---------------------------------------------------------------------------------------------- load

/** One wrk run. */
interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  errors: number;
  non2xx: number;
  p50Ms: number;
  p99Ms: number;
}

const WRK_LUA = `${TMP}/post.lua`;
await Deno.writeTextFile(
  WRK_LUA,
  `wrk.method = "POST"
wrk.body = ${JSON.stringify(CHAT_BODY)}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${TOKEN}"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH_JSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
`,
);

async function wrk(url: string, seconds: number): Promise<WrkResult> {
  const out = await run(
    pinned(LOADGEN_CPU, ["wrk", "-t1", "-c50", `-d${seconds}s`, "-s", WRK_LUA, url]),
    { timeoutMs: (seconds + 30) * 1000 },
  );
  const line = out.stdout.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk failed: ${(out.stderr || out.stdout).slice(0, 300)}`);
  const j = JSON.parse(line.slice("BENCH_JSON ".length)) as Record<string, number>;
  const secs = j.duration_us / 1e6;
  return {
    requests: j.requests,
    seconds: secs,
    rps: j.requests / secs,
    errors: j.errors,
    non2xx: j.non2xx,
    p50Ms: j.p50_us / 1000,
    p99Ms: j.p99_us / 1000,
  };
}

/** Latency at a fixed rate. */
interface LatencyResult {
  sent: number;
  failed: number;
  rate: number;
  ms: Summary & { p999: number };
  cpuUsPerRequest: number;
}

async function fixedRate(server: Server, seconds: number): Promise<LatencyResult> {
  const body = `${TMP}/chat.json`;
  await Deno.writeTextFile(body, CHAT_BODY);
  const warm = 1;
  const perProcess = LATENCY_RPS / LATENCY_PROCESSES;
  const logs: string[] = [];
  const cpu0 = await cpuMicros(server.pid);
  const started = performance.now();
  const runs: Promise<CommandResult>[] = [];
  for (let i = 0; i < LATENCY_PROCESSES; i++) {
    const logFile = `${TMP}/h2load-${i}.log`;
    await Deno.remove(logFile).catch(() => {});
    logs.push(logFile);
    runs.push(run(
      pinned(LOADGEN_CPU, [
        "h2load",
        "--h1",
        "-t1",
        "-c1",
        `--rps=${perProcess}`,
        `-D`,
        String(seconds),
        `--warm-up-time=${warm}`,
        "-d",
        body,
        "-H",
        "content-type: application/json",
        "-H",
        `authorization: Bearer ${TOKEN}`,
        `--log-file=${logFile}`,
        `${server.base}/v1/chat/completions`,
      ]),
      { timeoutMs: (seconds + warm + 30) * 1000 },
    ));
    // Independent processes, started at uneven offsets: their 5 ms timers interleave instead of firing together.
    await sleep(1.3 + i * 0.4);
  }
  const outs = await Promise.all(runs);
  const elapsed = (performance.now() - started) / 1000;
  const cpu1 = await cpuMicros(server.pid);
  const latencies: number[] = [];
  let failed = 0;
  for (const [i, file] of logs.entries()) {
    let text = "";
    try {
      text = await Deno.readTextFile(file);
    } catch {
      throw new Error(
        `h2load produced no log: ${outs[i].stderr.slice(0, 300) || outs[i].stdout.slice(-300)}`,
      );
    }
    for (const line of text.split("\n")) {
      if (!line) continue;
      const [, status, micros] = line.split("\t");
      if (status === "200") latencies.push(Number(micros) / 1000);
      else failed++;
    }
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const p999 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.999) - 1)] ?? NaN;
  return {
    sent: latencies.length + failed,
    failed,
    rate: (latencies.length + failed) / seconds,
    ms: { ...summarize(latencies), p999: round(p999, 3) },
    cpuUsPerRequest: (cpu1 - cpu0) / (LATENCY_RPS * elapsed),
  };
}

async function probe(args: string[], timeoutMs: number): Promise<CommandResult> {
  return await run(pinned(LOADGEN_CPU, ["deno", "run", "-A", `${BENCH_DIR}/stream_probe.ts`, ...args]), {
    timeoutMs,
  });
}

async function streamTiming(server: Server): Promise<TimingResult> {
  const s = PLAN.streams;
  const common = [
    "--url",
    `${server.base}/v1/chat/completions`,
    "--token",
    TOKEN,
    "--model",
    "bench-chat",
    "--chunks",
    String(s.chunks),
    "--interval",
    String(s.interval),
    "--concurrency",
    String(s.concurrency),
  ];
  const out = await probe(
    ["timing", ...common, "--streams", String(s.streams), "--warmup", String(s.warmup)],
    300_000,
  );
  const line = out.stdout.trim().split("\n").pop() ?? "";
  if (out.code !== 0 || !line.startsWith("{")) {
    throw new Error(`stream probe failed: ${out.stderr.slice(0, 300)}`);
  }
  return JSON.parse(line) as TimingResult;
}

/** Memory with N open streams. */
interface HoldMeasure {
  streams: number;
  ready: number;
  failed: number;
  rssBeforeKiB: number;
  rssOpenKiB: number;
  kbPerStream: number;
  openMs: number;
  errors: string[];
}

async function holdStreams(server: Server, n: number): Promise<HoldMeasure> {
  // Settle the fresh server: a few requests and streams, then the baseline.
  for (let i = 0; i < 50; i++) await (await fetch(`${server.base}/v1/chat/completions`, chatInit())).text();
  await probe([
    "timing",
    "--url",
    `${server.base}/v1/chat/completions`,
    "--token",
    TOKEN,
    "--streams",
    "20",
    "--concurrency",
    "10",
    "--chunks",
    "5",
    "--interval",
    "2",
    "--warmup",
    "0",
  ], 60_000);
  await sleep(1_000);
  const before = await rssKiB(server.pid);
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${PIN ? `taskset -c ${LOADGEN_CPU} ` : ""}deno run -A ${
        shq(`${BENCH_DIR}/stream_probe.ts`)
      } hold --url ${
        shq(`${server.base}/v1/chat/completions`)
      } --token ${TOKEN} --streams ${n} --chunks 1000000 --interval 1000 --batch 250 --ready-timeout 20000`,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextResult = async (): Promise<HoldResult> => {
    while (true) {
      const nl = buffered.indexOf("\n");
      if (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith("{")) return JSON.parse(line) as HoldResult;
        continue;
      }
      const { value, done } = await lines.read();
      if (done) throw new Error(`hold probe ended early: ${(await stderr).slice(0, 300)}`);
      buffered += value;
    }
  };
  const timeout = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 180_000);
  try {
    const ready = await nextResult();
    await sleep(2_000);
    const samples = [];
    for (let i = 0; i < 3; i++) {
      samples.push(await rssKiB(server.pid));
      await sleep(500);
    }
    const open = samples.sort((a, b) => a - b)[1];
    await child.stdin.close();
    await Promise.race([nextResult().catch(() => undefined), sleep(10_000)]);
    return {
      streams: n,
      ready: ready.ready,
      failed: ready.failed,
      rssBeforeKiB: before,
      rssOpenKiB: open,
      // Per stream actually open: a server that could not open them all is judged on the ones it did.
      kbPerStream: ((open - before) * 1.024) / Math.max(1, ready.ready),
      openMs: ready.openMs,
      errors: ready.errors,
    };
  } finally {
    clearTimeout(timeout);
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await lines.cancel().catch(() => {});
  }
}

/** Cold start: spawn to the first 200 of a real chat request. */
async function coldStart(argv: string[], env: Record<string, string>, port: number): Promise<number> {
  const started = performance.now();
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: ROOT,
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  child.status.then(() => exited = true);
  try {
    while (performance.now() - started < 15_000) {
      if (exited) throw new Error(`exited: ${(await stderr).trim().slice(0, 300)}`);
      try {
        const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, chatInit());
        await response.body?.cancel();
        if (response.status === 200) return performance.now() - started;
      } catch { /* not listening yet */ }
      await sleep(1);
    }
    throw new Error("no 200 within 15 s");
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await stderr.catch(() => "");
  }
}

// ---------------------------------------------------------------------------------------------- the run

/** Everything measured, also written as RESULTS.json. */
interface Results {
  date: string;
  mode: "quick" | "full";
  machine: Record<string, string>;
  layout: string;
  backgroundBusyStart: number;
  backgroundBusyEnd: number;
  targets: { key: string; label: string; runtime: string; kind: string; unavailable?: string }[];
  throughput: Record<string, { runs: WrkResult[]; cpuUsPerRequest: number; error?: string }>;
  latency: Record<string, LatencyResult | { error: string }>;
  streams: Record<string, TimingResult | { error: string }>;
  memory: Record<string, (HoldMeasure | { streams: number; error: string })[]>;
  coldStart: Record<string, { runsMs: number[]; error?: string }>;
  notes: string[];
  durationS: number;
}

async function machineInfo(): Promise<Record<string, string>> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo");
  const meminfo = await Deno.readTextFile("/proc/meminfo");
  const memKiB = Number(/MemTotal:\s+(\d+)/.exec(meminfo)?.[1] ?? 0);
  const first = (text: string) => text.trim().split("\n")[0] ?? "";
  return {
    cpus: String(navigator.hardwareConcurrency),
    model: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? "unknown",
    memory: `${(memKiB / 1024 / 1024).toFixed(1)} GiB`,
    kernel: `${Deno.build.os} ${Deno.osRelease()}`,
    deno: Deno.version.deno,
    bun: BUN ? first((await run([BUN, "--version"])).stdout) : "unavailable",
    wrk: first((await run(["wrk", "--version"])).stdout).replace(/ Copyright.*/, ""),
    h2load: first((await run(["h2load", "--version"])).stdout),
    loadavg: Deno.loadavg().map((x) => x.toFixed(2)).join(" "),
  };
}

async function main(): Promise<Results> {
  const t0 = performance.now();
  await ensureTools();
  // Other work on a 2-core box skews everything: wait (bounded) for it to calm down, and report what it was.
  let backgroundBusyStart = await machineBusy(2_000);
  const quietDeadline = performance.now() + (QUICK ? 20_000 : 60_000);
  while (backgroundBusyStart > 0.15 && performance.now() < quietDeadline) {
    log(`background load ${(backgroundBusyStart * 100).toFixed(0)}% of all CPUs; waiting for < 15%`);
    backgroundBusyStart = await machineBusy(3_000);
  }
  log(`background load ${(backgroundBusyStart * 100).toFixed(0)}% of all CPUs`);
  BUN = await findBun();
  const binaryProblem = await ensureBinary();
  const notes: string[] = [];
  const results: Results = {
    date: new Date().toISOString(),
    mode: QUICK ? "quick" : "full",
    machine: await machineInfo(),
    layout: PIN
      ? `server under test pinned to CPU ${SUT_CPU}; wrk/h2load, the fake upstream and the stream probe on CPU ${LOADGEN_CPU}`
      : "no CPU pinning (--no-pin)",
    backgroundBusyStart,
    backgroundBusyEnd: NaN,
    targets: [],
    throughput: {},
    latency: {},
    streams: {},
    memory: {},
    coldStart: {},
    notes,
    durationS: 0,
  };

  // The fake upstream: Bun when available (the fastest), else Deno.
  const upPort = freePort();
  const upstream = spawnServer(
    "upstream",
    BUN
      ? [BUN, `${BENCH_DIR}/fake_upstream.ts`, "--port", String(upPort)]
      : ["deno", "run", "-A", `${BENCH_DIR}/fake_upstream.ts`, "--port", String(upPort)],
    upPort,
    { cpu: LOADGEN_CPU },
  );
  upstreamUrl = upstream.base;
  await waitReady(upstream);
  results.machine.upstream = BUN ? `fake upstream on bun ${BUN_VERSION}` : "fake upstream on deno";

  const targets: Target[] = [
    { key: "direct", label: "direct to fake upstream", runtime: BUN ? "bun" : "deno", kind: "upstream" },
    {
      key: "bare-deno",
      label: "bare proxy",
      runtime: "deno",
      kind: "bare",
      start: (n) => startBare("deno", n),
    },
    {
      key: "bare-bun",
      label: "bare proxy",
      runtime: "bun",
      kind: "bare",
      unavailable: BUN ? undefined : `Bun ${BUN_VERSION} unavailable`,
      start: (n) => startBare("bun", n),
    },
    {
      key: "gw-deno",
      label: "gateway (deno run main.ts)",
      runtime: "deno",
      kind: "gateway",
      start: (n) => startGateway("deno", n),
    },
    {
      key: "gw-bun",
      label: "gateway (Bun binary dist/gateway)",
      runtime: "bun",
      kind: "gateway",
      unavailable: binaryProblem,
      start: (n) => startGateway("bun", n),
    },
  ];
  const servers: Server[] = [upstream];
  try {
    for (const t of targets) {
      if (t.key === "direct") {
        t.server = upstream;
        continue;
      }
      if (t.unavailable) continue;
      log(`starting ${t.key}`);
      try {
        t.server = await t.start!(t.key);
        servers.push(t.server);
      } catch (err) {
        t.unavailable = `failed to start: ${err instanceof Error ? err.message : String(err)}`;
        log(`${t.key}: ${t.unavailable}`);
      }
    }
    results.targets = targets.map(({ key, label, runtime, kind, unavailable }) => ({
      key,
      label,
      runtime,
      kind,
      unavailable,
    }));
    const live = targets.filter((t) => t.server !== undefined);
    // While the upstream itself is measured it gets the server core, like every other server under test.
    const asSut = async (t: Target, fn: () => Promise<void>) => {
      if (t.key === "direct" && PIN) await run(["taskset", "-a", "-p", "-c", SUT_CPU, String(upstream.pid)]);
      try {
        await fn();
      } finally {
        if (t.key === "direct" && PIN) {
          await run(["taskset", "-a", "-p", "-c", LOADGEN_CPU, String(upstream.pid)]);
        }
      }
    };

    // Throughput: interleaved rounds so drift in background load spreads over every target.
    for (const t of live) results.throughput[t.key] = { runs: [], cpuUsPerRequest: NaN };
    const cpuTotals: Record<string, { us: number; requests: number }> = {};
    for (let r = 0; r < (PHASES.has("throughput") ? PLAN.rounds : 0); r++) {
      for (const t of live) {
        const entry = results.throughput[t.key];
        if (entry.error) continue;
        const url = `${t.server!.base}/v1/chat/completions`;
        log(`throughput round ${r + 1}/${PLAN.rounds}: ${t.key}`);
        await asSut(t, async () => {
          try {
            if (r === 0) await wrk(url, PLAN.warmSeconds);
            await sleep(300);
            const c0 = await cpuMicros(t.server!.pid);
            const result = await wrk(url, PLAN.wrkSeconds);
            const c1 = await cpuMicros(t.server!.pid);
            entry.runs.push(result);
            const total = cpuTotals[t.key] ??= { us: 0, requests: 0 };
            total.us += c1 - c0;
            total.requests += result.requests;
            entry.cpuUsPerRequest = total.us / total.requests;
          } catch (err) {
            entry.error = err instanceof Error ? err.message : String(err);
          }
        });
      }
    }

    for (const t of PHASES.has("latency") ? live : []) {
      log(`latency at ${LATENCY_RPS} RPS: ${t.key}`);
      await asSut(t, async () => {
        try {
          results.latency[t.key] = await fixedRate(t.server!, PLAN.latencySeconds);
        } catch (err) {
          results.latency[t.key] = { error: err instanceof Error ? err.message : String(err) };
        }
      });
    }

    for (const t of PHASES.has("streams") ? live : []) {
      log(`stream timing: ${t.key}`);
      await asSut(t, async () => {
        try {
          results.streams[t.key] = await streamTiming(t.server!);
        } catch (err) {
          results.streams[t.key] = { error: err instanceof Error ? err.message : String(err) };
        }
      });
    }

    // Memory: a fresh process per (target, N), so earlier phases' heap does not blur the baseline.
    for (const t of live) {
      if (t.key === "direct") continue;
      await t.server!.stop();
    }
    for (const t of PHASES.has("memory") ? live : []) {
      if (t.key === "direct") continue;
      results.memory[t.key] = [];
      for (const n of PLAN.holds) {
        log(`memory with ${n} open streams: ${t.key}`);
        let server: Server | undefined;
        try {
          server = await t.start!(`${t.key}-hold-${n}`);
          servers.push(server);
          results.memory[t.key].push(await holdStreams(server, n));
        } catch (err) {
          results.memory[t.key].push({ streams: n, error: err instanceof Error ? err.message : String(err) });
        } finally {
          await server?.stop();
        }
      }
    }

    // Cold start: the Bun binary (the target) and `deno run main.ts` (for reference).
    const coldTargets: [string, (port: number, dataDir: string) => string[], string | undefined][] = [
      [
        "gw-bun",
        (p) => [BINARY, "serve", "--config", `${BENCH_DIR}/config.yaml`, "--port", String(p)],
        binaryProblem,
      ],
      [
        "gw-deno",
        (
          p,
        ) => [
          "deno",
          "run",
          "-A",
          "main.ts",
          "serve",
          "--config",
          `${BENCH_DIR}/config.yaml`,
          "--port",
          String(p),
        ],
        undefined,
      ],
    ];
    for (const [key, argv, problem] of PHASES.has("cold") ? coldTargets : []) {
      results.coldStart[key] = { runsMs: [] };
      if (problem) {
        results.coldStart[key].error = problem;
        continue;
      }
      log(`cold start: ${key}`);
      for (let i = 0; i < PLAN.coldRuns; i++) {
        const port = freePort();
        const dataDir = `${TMP}/cold-${key}-${i}`;
        await Deno.mkdir(dataDir, { recursive: true });
        try {
          results.coldStart[key].runsMs.push(
            await coldStart(argv(port, dataDir), {
              BENCH_UPSTREAM_URL: upstreamUrl,
              BENCH_DATA_DIR: dataDir,
              BENCH_TOKEN: TOKEN,
            }, port),
          );
        } catch (err) {
          results.coldStart[key].error = err instanceof Error ? err.message : String(err);
          break;
        }
      }
    }
  } finally {
    for (const s of servers) await s.stop();
  }
  results.backgroundBusyEnd = await machineBusy(2_000);
  results.durationS = Math.round((performance.now() - t0) / 1000);
  return results;
}

// ---------------------------------------------------------------------------------------------- report

const verdict = (ok: boolean | undefined) => ok === undefined ? "—" : ok ? "**PASS**" : "**MISS**";
const f = (x: number | undefined, digits = 2) =>
  x === undefined || !Number.isFinite(x) ? "—" : x.toFixed(digits);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2
    ? s[(s.length - 1) / 2]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const isError = (x: object | undefined): x is { error: string } => x !== undefined && "error" in x;

function render(r: Results): string {
  const out: string[] = [];
  const notes = [...r.notes];
  const name = (key: string) => {
    const t = r.targets.find((t) => t.key === key)!;
    return `${key} (${t.runtime})`;
  };
  const bareOf = (runtime: string) => `bare-${runtime}`;
  const down = (key: string) => r.targets.find((t) => t.key === key)?.unavailable;

  out.push(`# Benchmark results`, "");
  out.push(
    `Written by \`deno task bench${
      r.mode === "quick" ? " --quick" : ""
    }\` from the run below; numbers are from that`,
    `run only. Re-run to refresh. Raw numbers: \`bench/RESULTS.json\`.`,
    "",
  );
  out.push(`- **Date:** ${r.date} (${r.mode} run, ${r.durationS} s)`);
  const m = r.machine;
  out.push(`- **Machine:** ${m.cpus} CPUs (${m.model}), ${m.memory} RAM, ${m.kernel}`);
  out.push(`- **Runtimes / tools:** deno ${m.deno}, bun ${m.bun}, ${m.wrk}, ${m.h2load}; ${m.upstream}`);
  out.push(`- **Layout:** ${r.layout}`);
  out.push(
    `- **Background load** (other processes, before / after): ${f(r.backgroundBusyStart * 100, 0)}% / ` +
      `${f(r.backgroundBusyEnd * 100, 0)}% of all CPUs; load average at start ${m.loadavg}`,
  );
  out.push("");
  for (const t of r.targets) if (t.unavailable) out.push(`> **${t.key} not measured:** ${t.unavailable}`, "");

  // Throughput
  const rps: Record<string, number> = {};
  for (const [key, e] of Object.entries(r.throughput)) rps[key] = median(e.runs.map((x) => x.rps));
  out.push(
    `## Non-streaming throughput`,
    "",
    `\`wrk -t1 -c50\` POST /v1/chat/completions, ${PLAN.rounds} × ${PLAN.wrkSeconds} s per target ` +
      `(interleaved rounds; median, range). Target: the gateway ≥ ${
        TARGETS.throughputRatio * 100
      }% of the bare ` +
      `proxy on the same runtime.`,
    "",
    `| target | RPS (median) | range | errors / non-2xx | vs direct | vs bare proxy | target | result |`,
    `| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |`,
  );
  for (const t of r.targets) {
    const e = r.throughput[t.key];
    if (!e || e.runs.length === 0) {
      out.push(`| ${name(t.key)} | — | | | | | | ${e?.error ?? t.unavailable ?? "not run"} |`);
      continue;
    }
    const rs = e.runs.map((x) => x.rps);
    const errs = e.runs.reduce((a, x) => a + x.errors, 0);
    const non2xx = e.runs.reduce((a, x) => a + x.non2xx, 0);
    const vsDirect = rps[t.key] / rps.direct;
    const bare = rps[bareOf(t.runtime)];
    const vsBare = t.kind === "gateway" ? rps[t.key] / bare : NaN;
    out.push(
      `| ${name(t.key)} | ${f(rps[t.key], 0)} | ${f(Math.min(...rs), 0)}–${f(Math.max(...rs), 0)} | ` +
        `${errs} / ${non2xx} | ${f(vsDirect * 100, 1)}% | ${
          t.kind === "gateway" ? `${f(vsBare * 100, 1)}%` : ""
        } | ` +
        `${t.kind === "gateway" ? `≥ 80% of ${bareOf(t.runtime)}` : ""} | ` +
        `${
          t.kind === "gateway"
            ? verdict(Number.isFinite(vsBare) ? vsBare >= TARGETS.throughputRatio : undefined)
            : ""
        } |`,
    );
  }
  out.push("");

  // CPU
  out.push(
    `## CPU per non-streaming request`,
    "",
    `utime + stime of the server process (all threads) from \`/proc/<pid>/stat\`, divided by requests served: ` +
      `during the wrk runs (saturated) and during the fixed ${LATENCY_RPS} RPS run. The target is judged on the ` +
      `saturated number.`,
    "",
    `| target | µs/request (wrk) | µs/request (${LATENCY_RPS} RPS) | target | result |`,
    `| --- | ---: | ---: | --- | --- |`,
  );
  for (const t of r.targets) {
    const e = r.throughput[t.key];
    const lat = r.latency[t.key];
    const atRate = lat && !isError(lat) ? lat.cpuUsPerRequest : NaN;
    const limit = t.kind === "gateway" ? TARGETS.cpuUs[t.runtime] : undefined;
    const us = e?.cpuUsPerRequest;
    out.push(
      `| ${name(t.key)} | ${f(us, 1)} | ${f(atRate, 1)} | ${limit ? `≤ ${limit} µs` : ""} | ` +
        `${limit ? verdict(us !== undefined && Number.isFinite(us) ? us <= limit : undefined) : ""}${
          down(t.key) ? " not measured" : ""
        } |`,
    );
  }
  out.push("");

  // Latency
  const direct = r.latency.direct;
  out.push(
    `## Latency at a fixed ${LATENCY_RPS} RPS`,
    "",
    `${LATENCY_PROCESSES} independent \`h2load --h1 -c1 --rps=${
      LATENCY_RPS / LATENCY_PROCESSES
    }\` processes ` +
      `(one connection each, started at uneven offsets so their timers do not fire in lockstep), ` +
      `${PLAN.latencySeconds} s after 1 s of warm-up; per-request times from \`--log-file\`. Added = the ` +
      `target's percentile minus direct's. Targets: added p50 ≤ ${TARGETS.addedP50Ms} ms, added p99 ≤ ` +
      `${TARGETS.addedP99Ms} ms.`,
    "",
    `| target | sent / failed | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | added p50 | added p99 | result |`,
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |`,
  );
  for (const t of r.targets) {
    const l = r.latency[t.key];
    if (!l || isError(l)) {
      out.push(`| ${name(t.key)} | — | | | | | | | | ${isError(l) ? l.error : t.unavailable ?? "not run"} |`);
      continue;
    }
    const d = direct && !isError(direct) ? direct.ms : undefined;
    const a50 = d ? l.ms.p50 - d.p50 : NaN;
    const a99 = d ? l.ms.p99 - d.p99 : NaN;
    const judged = t.kind === "gateway" && d;
    out.push(
      `| ${name(t.key)} | ${l.sent} / ${l.failed} | ${f(l.ms.p50, 3)} | ${f(l.ms.p90, 3)} | ${
        f(l.ms.p99, 3)
      } | ` +
        `${f(l.ms.p999, 3)} | ${f(l.ms.max, 2)} | ${t.key === "direct" ? "" : f(a50, 3)} | ` +
        `${t.key === "direct" ? "" : f(a99, 3)} | ${
          judged
            ? `p50 ${verdict(a50 <= TARGETS.addedP50Ms)}, p99 ${
              verdict(a99 <= TARGETS.addedP99Ms && l.failed === 0)
            }`
            : ""
        } |`,
    );
  }
  out.push("");

  // Streams
  const s = PLAN.streams;
  const ds = r.streams.direct;
  out.push(
    `## Streams`,
    "",
    `\`bench/stream_probe.ts timing\`: ${s.streams} streams (${s.concurrency} at a time, after ${s.warmup} warm-up ` +
      `streams), each ${s.chunks} content chunks ${s.interval} ms apart. TTFC = request sent → first SSE event. ` +
      `Chunk delay = each chunk's (arrival − upstream send time) beyond the fastest chunk of its stream. ` +
      `Added = target's p99 minus direct's. Targets: added TTFC p99 ≤ ${TARGETS.ttfcAddedP99Ms} ms, added chunk ` +
      `delay p99 ≤ ${TARGETS.chunkAddedP99Ms} ms, chunks out = chunks in (none lost, merged, duplicated or ` +
      `reordered).`,
    "",
    `| target | TTFC p50 | TTFC p99 | added TTFC p99 | chunk delay p50 | p99 | added p99 | chunks in → out | lost / merged / dup / reordered / no [DONE] | result |`,
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |`,
  );
  for (const t of r.targets) {
    const x = r.streams[t.key];
    if (!x || isError(x)) {
      out.push(`| ${name(t.key)} | — | | | | | | | | ${isError(x) ? x.error : t.unavailable ?? "not run"} |`);
      continue;
    }
    const d = ds && !isError(ds) ? ds : undefined;
    const addT = d ? x.ttfcMs.p99 - d.ttfcMs.p99 : NaN;
    const addC = d ? x.chunkDelayMs.p99 - d.chunkDelayMs.p99 : NaN;
    const intact = x.lost === 0 && x.merged === 0 && x.duplicated === 0 && x.outOfOrder === 0 &&
      x.missingDone === 0 && x.chunksReceived === x.chunksExpected;
    const judged = t.kind === "gateway" && d;
    out.push(
      `| ${name(t.key)} | ${f(x.ttfcMs.p50, 3)} | ${f(x.ttfcMs.p99, 3)} | ${
        t.key === "direct" ? "" : f(addT, 3)
      } | ` +
        `${f(x.chunkDelayMs.p50, 3)} | ${f(x.chunkDelayMs.p99, 3)} | ${
          t.key === "direct" ? "" : f(addC, 3)
        } | ` +
        `${x.chunksExpected} → ${x.chunksReceived} | ${x.lost} / ${x.merged} / ${x.duplicated} / ${x.outOfOrder} / ` +
        `${x.missingDone} | ${
          judged
            ? `TTFC ${verdict(addT <= TARGETS.ttfcAddedP99Ms)}, chunk ${
              verdict(addC <= TARGETS.chunkAddedP99Ms)
            }, ` +
              `integrity ${verdict(intact)}`
            : `integrity ${verdict(intact)}`
        } |`,
    );
    if (x.errors.length > 0) notes.push(`${t.key} stream errors: ${x.errors.join("; ")}`);
  }
  out.push("");

  // Memory
  out.push(
    `## Memory per open stream`,
    "",
    `A fresh server per row; baseline VmRSS after 50 requests and 20 short streams; then N streams held open ` +
      `(a chunk every second, opened 250 at a time), VmRSS 2 s after the last one's first chunk (median of 3 ` +
      `samples). KB = 1,000 bytes. Target: ≤ ${TARGETS.kbPerStream} KB per stream at 5,000 streams (gateways).`,
    "",
    `| target | streams open | RSS before MiB | RSS open MiB | KB / open stream | target | result |`,
    `| --- | ---: | ---: | ---: | ---: | --- | --- |`,
  );
  for (const t of r.targets) {
    const rows = r.memory[t.key];
    if (!rows) {
      if (t.key !== "direct") out.push(`| ${name(t.key)} | — | | | | | ${t.unavailable ?? "not run"} |`);
      continue;
    }
    for (const row of rows) {
      if (isError(row)) {
        out.push(`| ${name(t.key)} | ${row.streams}: — | | | | | ${row.error} |`);
        continue;
      }
      const judged = t.kind === "gateway" && row.streams === 5000;
      out.push(
        `| ${name(t.key)} | ${row.ready} of ${row.streams}${row.failed ? ` (${row.failed} failed)` : ""} | ` +
          `${f(row.rssBeforeKiB / 1024, 1)} | ${f(row.rssOpenKiB / 1024, 1)} | ${f(row.kbPerStream, 1)} | ` +
          `${judged ? `≤ ${TARGETS.kbPerStream} KB` : ""} | ${
            judged
              ? verdict(row.ready === row.streams && row.kbPerStream <= TARGETS.kbPerStream) +
                (row.ready < row.streams ? ` (only ${row.ready} of ${row.streams} streams opened)` : "")
              : row.ready < row.streams
              ? `only ${row.ready} of ${row.streams} opened`
              : ""
          } |`,
      );
      if (row.errors.length > 0) notes.push(`${t.key} hold ${row.streams}: ${row.errors.join("; ")}`);
    }
  }
  out.push("");

  // Cold start
  out.push(
    `## Cold start`,
    "",
    `Process spawn → first 200 of a real chat request (auth, routing, upstream call), polled every ~1 ms; ` +
      `${PLAN.coldRuns} runs. Target: the Bun binary ready within ${TARGETS.coldStartMs} ms.`,
    "",
    `| target | runs | median ms | min ms | max ms | target | result |`,
    `| --- | ---: | ---: | ---: | ---: | --- | --- |`,
  );
  for (const [key, c] of Object.entries(r.coldStart)) {
    const label = key === "gw-bun" ? "gw-bun (dist/gateway)" : "gw-deno (deno run main.ts, reference)";
    if (c.runsMs.length === 0) {
      out.push(`| ${label} | 0 | — | | | | ${c.error ?? "not run"} |`);
      continue;
    }
    const med = median(c.runsMs);
    out.push(
      `| ${label} | ${c.runsMs.length} | ${f(med, 1)} | ${f(Math.min(...c.runsMs), 1)} | ` +
        `${f(Math.max(...c.runsMs), 1)} | ${key === "gw-bun" ? `≤ ${TARGETS.coldStartMs} ms` : ""} | ` +
        `${key === "gw-bun" ? verdict(med <= TARGETS.coldStartMs) : ""}${c.error ? ` (${c.error})` : ""} |`,
    );
  }
  out.push("");
  if (notes.length > 0) out.push(`## Notes`, "", ...notes.map((n) => `- ${n}`), "");
  return out.join("\n");
}

if (import.meta.main) {
  log(`${QUICK ? "quick" : "full"} run; gateway at ${ROOT}; temp ${TMP}`);
  const results = await main();
  const markdown = render(results);
  await Deno.mkdir(OUT.slice(0, OUT.lastIndexOf("/")) || ".", { recursive: true });
  await Deno.writeTextFile(OUT, markdown);
  const json = OUT.replace(/\.md$/, "") + ".json";
  await Deno.writeTextFile(json, JSON.stringify(results, null, 2) + "\n");
  // Keep the written files `deno fmt --check` clean (the repo's check task covers bench/).
  await run(["deno", "fmt", "--quiet", OUT, json], { cwd: ROOT });
  console.log(markdown);
  log(`wrote ${OUT} in ${results.durationS} s`);
  await Deno.remove(TMP, { recursive: true }).catch(() => {});
}
