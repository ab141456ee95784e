/**
 * Cross-gateway benchmark, in the setup of the public ai-gateway-bench: every gateway points at the same local
 * mock OpenAI-compatible upstream that answers after a fixed 20 ms, and what a gateway adds is its latency
 * minus the latency of the mock measured directly at the same concurrency.
 *
 * `deno run -A bench/cross_gateway.ts [--seconds 4] [--warm 1] [--concurrency 1,16,64] [--workers N]
 * [--out bench/CROSS_GATEWAY.json] [--skip-peers] [--only direct,gw-deno-w1,…]`
 *
 * - Mock: `bench/fake_upstream.ts --delay-ms 20 --chunks 10 --interval 0` on Bun (Deno without Bun): a chat
 *   completion answered after 20 ms; a streamed one sends its headers and first SSE event after 20 ms, then 10
 *   content events, a finish event and `[DONE]`, each in its own turn of the event loop (so each its own write).
 * - Targets, one at a time (started, checked, measured, stopped): `direct` (the mock on its own, first; each
 *   later cell is preceded by a 3 s direct run at the same shape and concurrency, its baseline, so both saw the
 *   same neighbours' load), this gateway on Deno (`deno run -A main.ts serve`) and
 *   as the Bun binary (`dist/gateway`, built with `deno task compile:bun` when missing or older than lib/),
 *   each with `--workers 1` and `--workers <CPUs>` on `bench/config.yaml` (auth, alias, access log to a file,
 *   SQLite usage records), and the peers that install from npm: Portkey's gateway (`@portkey-ai/gateway`,
 *   pinned, installed into a temp dir outside the repo and run with Node, pointed at the mock with its
 *   `x-portkey-provider: openai` and `x-portkey-custom-host` headers). Bifrost's npm package (a launcher
 *   that downloads its binary from the vendor's site) and LiteLLM (PyPI) are tried and reported as not run when
 *   they cannot be had here. A row that cannot run says why (e.g. a gateway that rejects `--workers`).
 * - Load: `wrk -t1 -cN` for each concurrency, non-streamed and streamed: closed-loop, N connections each with
 *   one request in flight, keep-alive; p50/p99 from wrk's latency histogram (µs resolution), requests/s, and
 *   every answer checked in wrk's `response` hook (a completion object; a stream ending in `[DONE]`). wrk is C
 *   on epoll and serves 64 connections at these rates (≤ 3,200 req/s at 20 ms) with a few percent of one core;
 *   its own CPU is measured and reported, so the client is shown not to be the bottleneck. The CPU of each
 *   target's process tree (workers included) per request is read from /proc.
 * - No CPU pinning: with all workers the gateway needs both cores, and the mock and wrk share them.
 *
 * Writes the JSON (default bench/CROSS_GATEWAY.json) and prints Markdown tables. Self-contained (it does not
 * load bench/harness/settings.ts, which parses `deno task bench`'s flags).
 *
 * @module
 */
import { parseArgs } from "node:util";

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "4" },
    warm: { type: "string", default: "1" },
    concurrency: { type: "string", default: "1,16,64" },
    workers: { type: "string" },
    out: { type: "string" },
    "skip-peers": { type: "boolean", default: false },
    only: { type: "string" },
  },
});

const BENCH_DIR = decodeURIComponent(new URL(".", import.meta.url).pathname).replace(/\/$/, "");
const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
const OUT = flags.out ?? `${BENCH_DIR}/CROSS_GATEWAY.json`;
const SECONDS = Number(flags.seconds);
const WARM = Number(flags.warm);
const CONCURRENCY = flags.concurrency.split(",").map(Number);
const CPUS = navigator.hardwareConcurrency;
const ALL_WORKERS = Number(flags.workers ?? CPUS);
const ONLY = flags.only ? new Set(flags.only.split(",")) : undefined;
const BUN_VERSION = "1.4.5";
const PORTKEY_VERSION = "1.15.2";
/**
 * Portkey 1.15.2 with the newest `@hono/node-server` 1.x (1.19.x, and 1.14.2 too) fails every streamed chat
 * completion on Node with `TypeError: immutable` (its response headers are the upstream fetch's, which it then
 * appends to; Portkey-AI/gateway issues 1389 and 1550); 1.13.8, within its `^1.3.3` range, streams.
 */
const PORTKEY_NODE_SERVER = "1.13.8";
const BIFROST_VERSION = "1.6.3";
const PEERS_DIR = "/tmp/gateway-bench-peers";
const TOKEN = "gw-bench-token-0123456789abcdef";
const MOCK_DELAY_MS = 20;
const MOCK_CHUNKS = 10;
/** The paired direct measurement before each cell (the mock is warm after the first `direct` row). */
const DIRECT_SECONDS = 3;
/** A cell is marked † when other processes used more than this many cores during it or its paired direct run. */
const SHARED_CORES = 0.5;
const TMP = await Deno.makeTempDir({ prefix: "gateway-xgw-" });
const decoder = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`[xgw ${new Date().toISOString().slice(11, 19)}] ${msg}`);
const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

// ------------------------------------------------------------------------------------------------ plumbing

interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(
  argv: string[],
  options: { timeoutMs?: number; cwd?: string; env?: Record<string, string> } = {},
): Promise<CommandResult> {
  try {
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      cwd: options.cwd,
      env: options.env,
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

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

const CLK_TCK = Number((await run(["getconf", "CLK_TCK"])).stdout.trim()) || 100;

/** Every process in the tree under `pid` (itself included), from /proc. */
async function processTree(pid: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry.name));
      children.set(ppid, list);
    } catch { /* gone */ }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** utime + stime of `pid` and all its descendants (threads included), in µs. */
async function treeCpuMicros(pid: number): Promise<number> {
  let ticks = 0;
  for (const p of await processTree(pid)) {
    try {
      const stat = await Deno.readTextFile(`/proc/${p}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch { /* gone */ }
  }
  return ticks * (1_000_000 / CLK_TCK);
}

/** Busy and total CPU time of the whole machine so far, in µs, from /proc/stat. */
async function machineMicros(): Promise<{ busy: number; total: number }> {
  const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1).map(
    Number,
  );
  const total = line.reduce((a, b) => a + b, 0);
  return { busy: (total - line[3] - line[4]) * (1_000_000 / CLK_TCK), total: total * (1_000_000 / CLK_TCK) };
}

/** Share of the whole machine busy over `ms`, from /proc/stat. */
async function machineBusy(ms: number): Promise<number> {
  const read = async () => {
    const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1).map(
      Number,
    );
    return { idle: line[3] + line[4], total: line.reduce((a, b) => a + b, 0) };
  };
  const a = await read();
  await sleep(ms);
  const b = await read();
  return 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
}

/** The busiest other processes right now (what shares the CPUs), from `ps`. */
async function busiestProcesses(): Promise<string[]> {
  const out = await run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"]);
  return out.stdout.trim().split("\n").slice(0, 6).map((l) => l.trim());
}

interface Server {
  name: string;
  pid: number;
  base: string;
  logFile: string;
  exited: boolean;
  stop(): Promise<void>;
}

function spawnServer(
  name: string,
  argv: string[],
  port: number,
  options: { env?: Record<string, string>; cwd?: string } = {},
): Server {
  const logFile = `${TMP}/${name}.log`;
  const script = `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${argv.map(shq).join(" ")} >${shq(logFile)} 2>&1`;
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
      // Workers (child processes) too: collected before the parent goes, killed by pid if they outlive it.
      const tree = server.exited ? [] : await processTree(child.pid);
      if (!server.exited) {
        try {
          child.kill("SIGTERM");
        } catch { /* gone */ }
        const timer = setTimeout(() => {
          try {
            child.kill("SIGKILL");
          } catch { /* gone */ }
        }, 5_000);
        await child.status;
        clearTimeout(timer);
      }
      await sleep(200);
      for (const pid of tree.slice(1)) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
    },
  };
  child.status.then(() => server.exited = true);
  return server;
}

async function logTail(server: Server, lines = 6): Promise<string> {
  try {
    const text = await Deno.readTextFile(server.logFile);
    // deno-lint-ignore no-control-regex
    const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
    return plain.trim().split("\n").slice(-lines).join(" | ").slice(0, 500);
  } catch {
    return "(no log)";
  }
}

// ------------------------------------------------------------------------------------------------ targets

/** How to talk to a target: its base URL, headers and the model name it routes to the mock. */
interface Client {
  headers: Record<string, string>;
  model: string;
}

interface Target {
  key: string;
  label: string;
  /** Why it was not run, when it was not. */
  notRun?: string;
  start?: () => Promise<{ server: Server; client: Client }>;
}

const gatewayClient: Client = {
  headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
  model: "bench-chat",
};

function body(client: Client, stream: boolean): string {
  return JSON.stringify({
    model: client.model,
    messages: [{ role: "user", content: "Hello, gateway! This is a benchmark request." }],
    ...(stream ? { stream: true } : {}),
  });
}

/** Throws unless `server` answers a chat completion and a full stream correctly within `timeoutMs`. */
async function waitReady(server: Server, client: Client, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = "";
  while (performance.now() < deadline) {
    if (server.exited) throw new Error(`exited: ${await logTail(server)}`);
    try {
      const response = await fetch(`${server.base}/v1/chat/completions`, {
        method: "POST",
        headers: client.headers,
        body: body(client, false),
      });
      const text = await response.text();
      if (response.status === 200 && text.includes("chat.completion")) break;
      last = `status ${response.status}: ${text.slice(0, 200)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    await sleep(100);
  }
  if (performance.now() >= deadline) throw new Error(`not ready after ${timeoutMs} ms (${last})`);
  const response = await fetch(`${server.base}/v1/chat/completions`, {
    method: "POST",
    headers: client.headers,
    body: body(client, true),
  });
  const text = await response.text();
  const contents = text.match(/"content":"c\d+\|/g)?.length ?? 0;
  if (response.status !== 200 || !text.includes("data: [DONE]") || contents !== MOCK_CHUNKS) {
    throw new Error(
      `stream check failed: status ${response.status}, ${contents} of ${MOCK_CHUNKS} content events, ` +
        `${text.includes("[DONE]") ? "" : "no "}[DONE]: ${text.slice(0, 200)}`,
    );
  }
}

async function findBun(): Promise<string | undefined> {
  const out = await run(["npx", "-y", `bun@${BUN_VERSION}`, "-e", "console.log(process.execPath)"], {
    timeoutMs: 180_000,
  });
  const path = out.stdout.trim().split("\n").pop() ?? "";
  return out.code === 0 && path.startsWith("/") ? path : undefined;
}

async function newestMtime(dir: string): Promise<number> {
  let newest = 0;
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) newest = Math.max(newest, await newestMtime(path));
    else newest = Math.max(newest, (await Deno.stat(path)).mtime?.getTime() ?? 0);
  }
  return newest;
}

/** `dist/gateway`, built with `deno task compile:bun` when missing or older than main.ts and lib/; or why not. */
async function ensureBinary(bun: string | undefined): Promise<string | undefined> {
  if (!bun) return `Bun ${BUN_VERSION} unavailable via npx`;
  const binary = `${ROOT}/dist/gateway`;
  const sources = Math.max(
    await newestMtime(`${ROOT}/lib`),
    (await Deno.stat(`${ROOT}/main.ts`)).mtime?.getTime() ?? 0,
  );
  const built = await Deno.stat(binary).then((s) => s.mtime?.getTime() ?? 0, () => 0);
  const version = await run([binary, "version"], { timeoutMs: 10_000 });
  if (built > sources && version.code === 0 && version.stdout.includes("bun")) return undefined;
  log("building dist/gateway: deno task compile:bun");
  const out = await run(["deno", "task", "compile:bun"], { cwd: ROOT, timeoutMs: 300_000 });
  if (out.code !== 0) {
    const lines = (out.stderr + out.stdout).trim().split("\n");
    return `deno task compile:bun failed: ${
      (lines.filter((l) => /error/i.test(l)).slice(0, 2).join("; ") || lines.slice(-2).join("; ")).slice(
        0,
        300,
      )
    }`;
  }
  return undefined;
}

function gatewayTarget(runtime: "deno" | "bun", workers: number, problem: string | undefined): Target {
  const key = `gw-${runtime}-w${workers}`;
  return {
    key,
    label:
      `this gateway, ${
        runtime === "deno" ? "Deno (`deno run -A main.ts serve`)" : "Bun binary (`dist/gateway`)"
      }, ` +
      `--workers ${workers}`,
    notRun: problem,
    start: async () => {
      const port = freePort();
      const dataDir = `${TMP}/${key}-data`;
      await Deno.mkdir(dataDir, { recursive: true });
      const config = `${BENCH_DIR}/config.yaml`;
      const common = ["serve", "--config", config, "--port", String(port), "--workers", String(workers)];
      const argv = runtime === "bun"
        ? [`${ROOT}/dist/gateway`, ...common]
        : ["deno", "run", "-A", "main.ts", ...common];
      const server = spawnServer(key, argv, port, {
        env: {
          BENCH_UPSTREAM_URL: mock.base,
          BENCH_DATA_DIR: dataDir,
          BENCH_TOKEN: TOKEN,
          ...(runtime === "bun" ? { BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" } : {}),
        },
      });
      try {
        await waitReady(server, gatewayClient);
      } catch (err) {
        await server.stop();
        const tail = await logTail(server);
        const message = err instanceof Error ? err.message : String(err);
        if (/workers/i.test(tail) || /workers/i.test(message)) {
          throw new Error(`the gateway rejected \`--workers ${workers}\`: ${tail.slice(0, 240)}`);
        }
        throw err;
      }
      return { server, client: gatewayClient };
    },
  };
}

/** Portkey's gateway from npm, installed (pinned) under PEERS_DIR; the reason when it cannot be. */
async function installPortkey(): Promise<{ entry?: string; node?: string; problem?: string }> {
  const dir = `${PEERS_DIR}/portkey-${PORTKEY_VERSION}`;
  const entry = `${dir}/node_modules/@portkey-ai/gateway/build/start-server.js`;
  const node = (await run(["node", "--version"])).stdout.trim();
  if (!node) return { problem: "node not found" };
  const installed = await Deno.readTextFile(`${dir}/node_modules/@portkey-ai/gateway/package.json`).then(
    (t) => (JSON.parse(t) as { version: string }).version,
    () => undefined,
  );
  const hono = await Deno.readTextFile(`${dir}/node_modules/@hono/node-server/package.json`).then(
    (t) => (JSON.parse(t) as { version: string }).version,
    () => undefined,
  );
  if (installed !== PORTKEY_VERSION || hono !== PORTKEY_NODE_SERVER) {
    log(`installing @portkey-ai/gateway@${PORTKEY_VERSION} into ${dir}`);
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(
      `${dir}/package.json`,
      JSON.stringify(
        {
          name: "gateway-bench-portkey",
          private: true,
          dependencies: { "@portkey-ai/gateway": PORTKEY_VERSION },
          overrides: { "@hono/node-server": PORTKEY_NODE_SERVER },
        },
        null,
        2,
      ),
    );
    const out = await run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: dir,
      timeoutMs: 300_000,
    });
    if (out.code !== 0) return { problem: `npm install failed: ${(out.stderr || out.stdout).slice(-300)}` };
  }
  return { entry, node };
}

/** Bifrost's npm package is a launcher that downloads the Go binary at first run; say why it cannot. */
async function tryBifrost(): Promise<string> {
  const dir = `${PEERS_DIR}/bifrost`;
  await Deno.mkdir(dir, { recursive: true });
  const out = await run(["npx", "-y", `@maximhq/bifrost@${BIFROST_VERSION}`, "--help"], {
    cwd: dir,
    timeoutMs: 120_000,
  });
  const text = out.stderr + out.stdout;
  if (out.code === 0) return `runs (\`--help\` exit 0), not wired into this bench yet`;
  const host = /hostname: '([^']+)'/.exec(text)?.[1];
  return host
    ? `\`npx @maximhq/bifrost@${BIFROST_VERSION}\` installs, but its launcher downloads the binary from ${host} ` +
      `(no route from this machine: ${/code: '(\w+)'/.exec(text)?.[1] ?? "fetch failed"})`
    : `\`npx @maximhq/bifrost@${BIFROST_VERSION}\` failed: ${
      text.trim().split("\n").slice(-2).join(" ").slice(0, 200)
    }`;
}

/** LiteLLM's proxy is a Python package (PyPI); only the npm registry is reachable here. */
async function tryLitellm(): Promise<string> {
  const out = await run(
    ["python3", "-m", "pip", "download", "--no-deps", "--dest", `${TMP}/pip`, "litellm[proxy]"],
    { timeoutMs: 60_000 },
  );
  if (out.code === 0) return "downloadable from PyPI, but not wired into this bench";
  const reason = (out.stderr || out.stdout).trim().split("\n").filter((l) => /ERROR/.test(l)).pop() ??
    out.stderr.slice(-200);
  return `PyPI unreachable here (\`pip download litellm[proxy]\`: ${
    reason.replace(/^ERROR: /, "").slice(0, 160)
  })`;
}

// ------------------------------------------------------------------------------------------------ load

/** One wrk run: requests/s, percentiles, failures (socket errors, non-2xx, wrong bodies) and wrk's CPU. */
interface Cell {
  concurrency: number;
  stream: boolean;
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  non2xx: number;
  badBodies: number;
  /** CPU of the target's process tree per request, µs. */
  cpuUsPerRequest: number;
  /** wrk's own CPU over the run, as a share of one core. */
  wrkCpuShare: number;
  /**
   * CPU used by everything else on the machine during the run (all busy time from /proc/stat minus the target's
   * tree, the mock's and wrk's), in cores: what shared the CPUs.
   */
  othersCores: number;
}

function wrkScript(client: Client, stream: boolean): string {
  const headers = Object.entries(client.headers).map(([k, v]) =>
    `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`
  )
    .join("\n");
  const expect = stream ? "data: [DONE]" : '"chat.completion"';
  return `wrk.method = "POST"
wrk.body = ${JSON.stringify(body(client, stream))}
${headers}
local threads = {}
function setup(thread) table.insert(threads, thread) end
bad = 0
function response(status, headers, body)
  if status == 200 and not string.find(body, ${JSON.stringify(expect)}, 1, true) then bad = bad + 1 end
end
done = function(summary, latency, requests)
  local e = summary.errors
  local b = 0
  for _, t in ipairs(threads) do b = b + (t:get("bad") or 0) end
  io.write(string.format('XGW_JSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"bad":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status, b,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;
}

async function wrk(
  server: Server,
  client: Client,
  concurrency: number,
  stream: boolean,
  seconds: number,
): Promise<Omit<Cell, "cpuUsPerRequest" | "othersCores">> {
  const script = `${TMP}/${stream ? "stream" : "json"}-${server.name}.lua`;
  await Deno.writeTextFile(script, wrkScript(client, stream));
  // `times` after wrk prints the shell's children's user and system CPU: wrk's own.
  const command = `wrk -t1 -c${concurrency} -d${seconds}s --timeout 10s -s ${shq(script)} ${
    shq(`${server.base}/v1/chat/completions`)
  }; times`;
  const out = await run(["bash", "-c", command], { timeoutMs: (seconds + 30) * 1000 });
  const line = out.stdout.split("\n").find((l) => l.startsWith("XGW_JSON "));
  if (!line) throw new Error(`wrk failed: ${(out.stderr || out.stdout).slice(0, 300)}`);
  const j = JSON.parse(line.slice("XGW_JSON ".length)) as Record<string, number>;
  const timesLine = out.stdout.trim().split("\n").pop() ?? "";
  const secs = [...timesLine.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  const wrkCpu = secs.length === 2 ? secs[0] + secs[1] : NaN;
  const duration = j.duration_us / 1e6;
  return {
    concurrency,
    stream,
    requests: j.requests,
    seconds: duration,
    rps: j.requests / duration,
    p50Ms: j.p50_us / 1000,
    p90Ms: j.p90_us / 1000,
    p99Ms: j.p99_us / 1000,
    maxMs: j.max_us / 1000,
    errors: j.errors,
    non2xx: j.non2xx,
    badBodies: j.bad,
    wrkCpuShare: wrkCpu / duration,
  };
}

/** One measured wrk run against `server` with its CPU accounting (after `warm` s of warm-up). */
async function cellOf(
  server: Server,
  client: Client,
  concurrency: number,
  stream: boolean,
  seconds: number,
  warm: number,
): Promise<Cell> {
  if (warm > 0) await wrk(server, client, concurrency, stream, warm);
  const m0 = await machineMicros();
  const mock0 = server === mock ? 0 : await treeCpuMicros(mock.pid);
  const cpu0 = await treeCpuMicros(server.pid);
  const cell = await wrk(server, client, concurrency, stream, seconds);
  const cpu1 = await treeCpuMicros(server.pid);
  const mock1 = server === mock ? 0 : await treeCpuMicros(mock.pid);
  const m1 = await machineMicros();
  const ours = (cpu1 - cpu0) + (mock1 - mock0) + cell.wrkCpuShare * cell.seconds * 1e6;
  const wall = ((m1.total - m0.total) / CPUS) / 1e6;
  return {
    ...cell,
    cpuUsPerRequest: (cpu1 - cpu0) / Math.max(1, cell.requests),
    othersCores: Math.max(0, (m1.busy - m0.busy - ours) / 1e6 / wall),
  };
}

/**
 * Every (shape, concurrency) cell of `server`; with `paired`, the mock is measured directly right before each
 * cell (no warm-up, `DIRECT_SECONDS`), so the baseline of its added latency saw the same neighbours' load.
 */
async function measure(
  server: Server,
  client: Client,
  paired: boolean,
): Promise<{ cells: Cell[]; direct: Cell[] }> {
  const cells: Cell[] = [];
  const direct: Cell[] = [];
  for (const stream of [false, true]) {
    for (const concurrency of CONCURRENCY) {
      log(`${server.name}: ${stream ? "streamed" : "non-streamed"}, ${concurrency} concurrent`);
      if (paired) direct.push(await cellOf(mock, mockClient, concurrency, stream, DIRECT_SECONDS, 0));
      cells.push(await cellOf(server, client, concurrency, stream, SECONDS, WARM));
    }
  }
  return { cells, direct };
}

// ------------------------------------------------------------------------------------------------ main

interface TargetResult {
  key: string;
  label: string;
  notRun?: string;
  cells: Cell[];
  /** The mock measured directly right before each of `cells` (same order): the baseline of added latency. */
  direct?: Cell[];
}

const t0 = performance.now();
const wrkPath = await run(["sh", "-c", "command -v wrk"]);
if (wrkPath.code !== 0) {
  log("installing wrk with bench/install_tools.sh");
  const out = await run(["sh", `${BENCH_DIR}/install_tools.sh`], { timeoutMs: 600_000 });
  if (out.code !== 0) throw new Error(`install_tools.sh failed: ${out.stderr.slice(-300)}`);
}
const bun = await findBun();
const binaryProblem = await ensureBinary(bun);

const peerNotes: Record<string, string> = {};
let portkey: { entry?: string; node?: string; problem?: string } = { problem: "skipped (--skip-peers)" };
if (!flags["skip-peers"]) {
  portkey = await installPortkey();
  peerNotes.bifrost = await tryBifrost();
  peerNotes.litellm = await tryLitellm();
}

const mockPort = freePort();
const mockArgv = [
  "bench/fake_upstream.ts",
  "--port",
  String(mockPort),
  "--delay-ms",
  String(MOCK_DELAY_MS),
  "--chunks",
  String(MOCK_CHUNKS),
  "--interval",
  "0",
];
const mock = spawnServer("mock", bun ? [bun, ...mockArgv] : ["deno", "run", "-A", ...mockArgv], mockPort);
const mockClient: Client = {
  headers: { "content-type": "application/json", authorization: "Bearer sk-bench" },
  model: "bench-model",
};
await waitReady(mock, mockClient);

const targets: Target[] = [
  { key: "direct", label: `mock upstream directly (${bun ? `Bun ${BUN_VERSION}` : "Deno"}, 20 ms)` },
  gatewayTarget("deno", 1, undefined),
  gatewayTarget("deno", ALL_WORKERS, undefined),
  gatewayTarget("bun", 1, binaryProblem),
  gatewayTarget("bun", ALL_WORKERS, binaryProblem),
  {
    key: "portkey",
    label: `Portkey gateway ${PORTKEY_VERSION} (npm, Node ${portkey.node ?? "?"}), 1 process`,
    notRun: portkey.problem,
    start: async () => {
      const port = freePort();
      const server = spawnServer("portkey", ["node", portkey.entry!, `--port=${port}`, "--headless"], port, {
        cwd: `${PEERS_DIR}/portkey-${PORTKEY_VERSION}`,
      });
      const client: Client = {
        headers: {
          "content-type": "application/json",
          authorization: "Bearer sk-bench",
          "x-portkey-provider": "openai",
          "x-portkey-custom-host": `${mock.base}/v1`,
        },
        model: "bench-model",
      };
      try {
        await waitReady(server, client);
      } catch (err) {
        await server.stop();
        throw err;
      }
      return { server, client };
    },
  },
  ...Object.entries(peerNotes).map(([key, why]) => ({
    key,
    label: key === "bifrost" ? `Bifrost (npm @maximhq/bifrost@${BIFROST_VERSION})` : "LiteLLM proxy (PyPI)",
    notRun: why,
  })),
];

// Other work on a 2-core box skews everything: wait (up to a minute) for it to calm down, and report it.
let busyStart = await machineBusy(2_000);
for (const deadline = performance.now() + 60_000; busyStart > 0.15 && performance.now() < deadline;) {
  log(`background load ${(busyStart * 100).toFixed(0)}% of all CPUs; waiting for < 15%`);
  busyStart = await machineBusy(3_000);
}
const loadStart = Deno.loadavg().map((x) => x.toFixed(2)).join(" ");
const sharingStart = await busiestProcesses();
log(`background load ${(busyStart * 100).toFixed(0)}% of all CPUs; load average ${loadStart}`);
const results: TargetResult[] = [];
try {
  const selected = targets.filter((t) => !ONLY || ONLY.has(t.key) || t.key === "direct");
  for (const t of selected) {
    if (t.key === "direct") {
      results.push({ key: t.key, label: t.label, ...await measure(mock, mockClient, false) });
      continue;
    }
    if (t.notRun || !t.start) {
      results.push({ key: t.key, label: t.label, notRun: t.notRun ?? "no way to start it", cells: [] });
      continue;
    }
    log(`starting ${t.key}`);
    let started: { server: Server; client: Client };
    try {
      started = await t.start();
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      log(`${t.key} not run: ${why}`);
      results.push({ key: t.key, label: t.label, notRun: why, cells: [] });
      continue;
    }
    try {
      results.push({ key: t.key, label: t.label, ...await measure(started.server, started.client, true) });
    } catch (err) {
      results.push({
        key: t.key,
        label: t.label,
        notRun: `failed while measured: ${err instanceof Error ? err.message : err}`,
        cells: [],
      });
    } finally {
      await started.server.stop();
    }
  }
} finally {
  await mock.stop();
}
const busyEnd = await machineBusy(2_000);

// ------------------------------------------------------------------------------------------------ report

const ms = (x: number) => (Math.abs(x) < 10 ? x.toFixed(2) : x.toFixed(1));
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${ms(Math.abs(x))}`;

function table(stream: boolean): string {
  const head = `| target | ${
    CONCURRENCY.map((c) => `c=${c} req/s | c=${c} added p50 / p99 ms`).join(" | ")
  } | CPU µs/req (c=${CONCURRENCY.at(-1)}) |`;
  const rule = `| --- | ${CONCURRENCY.map(() => "---: | ---:").join(" | ")} | ---: |`;
  const rows = results.map((r) => {
    if (r.notRun) return `| ${r.key} | not run (below) ${"| — ".repeat(CONCURRENCY.length * 2)}|`;
    const cols = CONCURRENCY.map((c) => {
      const cell = r.cells.find((x) => x.stream === stream && x.concurrency === c);
      if (!cell) return "— | —";
      const failures = cell.errors + cell.non2xx + cell.badBodies;
      const flag = failures > 0 ? ` (${failures} failed)` : "";
      const base = r.direct?.[r.cells.indexOf(cell)];
      const shared = Math.max(cell.othersCores, base?.othersCores ?? 0) > SHARED_CORES ? " †" : "";
      const latency = !base
        ? `${ms(cell.p50Ms)} / ${ms(cell.p99Ms)} (absolute)${shared}`
        : `${signed(cell.p50Ms - base.p50Ms)} / ${signed(cell.p99Ms - base.p99Ms)}${shared}`;
      return `${Math.round(cell.rps).toLocaleString("en-US")}${flag} | ${latency}`;
    });
    const last = r.cells.find((x) => x.stream === stream && x.concurrency === CONCURRENCY.at(-1));
    return `| ${r.key} | ${cols.join(" | ")} | ${last ? Math.round(last.cpuUsPerRequest) : "—"} |`;
  });
  return [head, rule, ...rows].join("\n");
}

const othersCores = results.flatMap((r) => r.cells.map((c) => c.othersCores)).filter(Number.isFinite);
const othersMean = othersCores.reduce((a, b) => a + b, 0) / Math.max(1, othersCores.length);
const othersMax = Math.max(0, ...othersCores);
const wrkShare = Math.max(
  ...results.flatMap((r) => r.cells.map((c) => c.wrkCpuShare)).filter(Number.isFinite),
);
const report = {
  date: new Date().toISOString(),
  command: `deno run -A bench/cross_gateway.ts${Deno.args.length ? " " + Deno.args.join(" ") : ""}`,
  durationS: Math.round((performance.now() - t0) / 1000),
  machine: {
    cpus: CPUS,
    model: /model name\s*:\s*(.*)/.exec(await Deno.readTextFile("/proc/cpuinfo"))?.[1] ?? "unknown",
    kernel: Deno.osRelease(),
    deno: Deno.version.deno,
    bun: bun ? (await run([bun, "--version"])).stdout.trim() : "unavailable",
    node: portkey.node ?? (await run(["node", "--version"])).stdout.trim(),
    wrk: (await run(["wrk", "--version"])).stdout.split("\n")[0].replace(/ Copyright.*/, ""),
    layout: "no CPU pinning: the target, the mock and wrk share both CPUs",
  },
  load: {
    backgroundBusyStart: busyStart,
    backgroundBusyEnd: busyEnd,
    loadavgStart: loadStart,
    loadavgEnd: Deno.loadavg().map((x) => x.toFixed(2)).join(" "),
    busiestProcessesAtStart: sharingStart,
    othersCoresDuringCells: { mean: othersMean, max: othersMax },
  },
  setup: {
    mock: {
      delayMs: MOCK_DELAY_MS,
      streamContentEvents: MOCK_CHUNKS,
      runtime: bun ? `bun ${BUN_VERSION}` : "deno",
    },
    seconds: SECONDS,
    warmSeconds: WARM,
    concurrency: CONCURRENCY,
    allWorkers: ALL_WORKERS,
    gatewayConfig: "bench/config.yaml",
    portkey: { version: PORTKEY_VERSION, honoNodeServer: PORTKEY_NODE_SERVER },
    maxWrkCpuShareOfOneCore: wrkShare,
  },
  results,
};
await Deno.writeTextFile(OUT, JSON.stringify(report, null, 2) + "\n");
if (OUT.startsWith(ROOT + "/")) await run(["deno", "fmt", "--quiet", OUT], { cwd: ROOT });
await Deno.remove(TMP, { recursive: true }).catch(() => {});

console.log(`### Non-streamed chat completion (mock answers after ${MOCK_DELAY_MS} ms)\n\n${table(false)}\n`);
console.log(
  `### Streamed (headers and first event after ${MOCK_DELAY_MS} ms, then ${MOCK_CHUNKS} content events; time to the ` +
    `stream's end)\n\n${table(true)}\n`,
);
console.log(
  `Added = the target's percentile minus the mock's, measured directly (${DIRECT_SECONDS} s) right before each ` +
    `cell. † = other processes used more than ${SHARED_CORES} of a core during the cell or its direct run.\n`,
);
const notRun = results.filter((r) => r.notRun);
if (notRun.length > 0) {
  console.log(`Not run:\n\n${notRun.map((r) => `- ${r.key} (${r.label}): ${r.notRun}`).join("\n")}\n`);
}
console.log(
  `Background load ${(busyStart * 100).toFixed(0)}% → ${
    (busyEnd * 100).toFixed(0)
  }% of both CPUs, load average ` +
    `${loadStart} → ${report.load.loadavgEnd}; wrk used at most ${
      (wrkShare * 100).toFixed(0)
    }% of one core; other processes used ${
      othersMean.toFixed(2)
    } cores on average during the measured runs ` +
    `(at most ${othersMax.toFixed(2)}); ${report.durationS} s. JSON: ${OUT}`,
);
