/**
 * Which JavaScript objects the gateway keeps alive per open stream: a heap snapshot of a warmed gateway, then
 * one with `--streams` slow streams held open (by bench/stream_probe.ts, a process of its own), and the
 * difference per object kind (V8 snapshot node type + name), per stream, beside the RSS growth per stream.
 *
 * Deno: the gateway runs with `--inspect`; GC and snapshots go over the inspector protocol. Bun: the gateway runs
 * under a small wrapper (written to a temp dir) that on SIGUSR2 runs `Bun.gc(true)` and writes `heapStats()`
 * and `Bun.generateHeapSnapshot("v8")`, so one parser reads both.
 *
 * Under `--inspect`, Deno's `fetch` tees every response body for the inspector's network view: the Deno
 * figures then include a tee per stream (two more streams and a 64 KiB read buffer) that a gateway run without
 * the inspector does not have. Read the Deno diff without them.
 *
 * Usage: `deno run -A bench/heap_per_stream.ts [--streams 1000] [--runtime deno|bun] [--top 40]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { stopChild } from "./harness/command.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    streams: { type: "string", default: "1000" },
    runtime: { type: "string", default: "deno" },
    top: { type: "string", default: "40" },
  },
});
const STREAMS = Number(values.streams);
const RUNTIME = values.runtime === "bun" ? "bun" : "deno";
const TOP = Number(values.top);
const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
const TOKEN = "gw-bench-token-0123456789abcdef";
const TMP = await Deno.makeTempDir({ prefix: "heap-per-stream-" });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`[heap] ${msg}`);
const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

const children: Deno.ChildProcess[] = [];
/** Starts argv under `sh` (fd limit raised, output to a log); `exec` keeps the pid the program's own. */
function spawn(
  name: string,
  argv: string[],
  env: Record<string, string> = {},
  piped = false,
): Deno.ChildProcess {
  const out = piped ? "" : ` >${shq(`${TMP}/${name}.log`)} 2>&1`;
  const child = new Deno.Command("sh", {
    args: ["-c", `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${argv.map(shq).join(" ")}${out}`],
    cwd: ROOT,
    env,
    stdin: piped ? "piped" : "null",
    stdout: piped ? "piped" : "null",
    stderr: piped ? "piped" : "null",
  }).spawn();
  children.push(child);
  return child;
}

async function cleanup(): Promise<void> {
  for (const child of children.reverse()) await stopChild(child);
}

const chatInit = (body: Record<string, unknown>): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
  body: JSON.stringify({
    model: "bench-chat",
    messages: [{ role: "user", content: "Hello, gateway!" }],
    ...body,
  }),
});

async function waitOk(url: string, init?: RequestInit, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    try {
      const response = await fetch(url, init);
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch { /* not yet */ }
    await sleep(100);
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms (logs in ${TMP})`);
}

const rssKiB = async (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(await Deno.readTextFile(`/proc/${pid}/status`))?.[1] ?? NaN);

// ------------------------------------------------------------------------------------- snapshot parsing

interface Kind {
  count: number;
  bytes: number;
}
interface Parsed {
  kinds: Map<string, Kind>;
  /** Closures by name and (Deno) source location `scriptId:line:column`. */
  closures: Map<string, Kind>;
  total: number;
  /** Script id → URL (Deno). */
  scripts: Map<string, string>;
}
interface RawSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      location_fields?: string[];
      edge_fields: string[];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
  locations?: number[];
}
/** Node types whose names are contents, not kinds. */
const COLLAPSED = new Set(["string", "concatenated string", "sliced string", "number", "bigint", "code"]);

function add(map: Map<string, Kind>, key: string, bytes: number): void {
  const k = map.get(key) ?? map.set(key, { count: 0, bytes: 0 }).get(key)!;
  k.count++;
  k.bytes += bytes;
}

function parseSnapshot(text: string): Parsed {
  const raw = JSON.parse(text) as RawSnapshot;
  const { node_fields: fields, node_types: [types], location_fields: lf = [] } = raw.snapshot.meta;
  const [stride, T, N, S] = [fields.length, ...["type", "name", "self_size"].map((f) => fields.indexOf(f))];
  const { nodes, strings } = raw;
  const [O, I, SO, LN, C] = ["object_index", "script_id", "script_object_index", "line", "column"]
    .map((f) => lf.indexOf(f));
  const where = new Map<number, string>();
  const scripts = new Map<string, string>();
  const loc = raw.locations ?? [];
  for (let i = 0; i < loc.length; i += lf.length) {
    where.set(loc[i + O], `${loc[i + I]}:${loc[i + LN]}:${loc[i + C]}`);
    if (SO >= 0) {
      scripts.set(String(loc[i + I]), strings[nodes[loc[i + SO] + N]].replace("system / Script / ", ""));
    }
  }
  const parsed: Parsed = { kinds: new Map(), closures: new Map(), total: 0, scripts };
  const { edges } = raw;
  const [ES, EN, ET, EC] = [raw.snapshot.meta.edge_fields.length, 1, 2, fields.indexOf("edge_count")];
  const firstEdge = new Int32Array(nodes.length / stride + 1);
  for (let k = 0; k < nodes.length / stride; k++) {
    firstEdge[k + 1] = firstEdge[k] + nodes[k * stride + EC] * ES;
  }
  /** The node `from`'s edge named `name` points at (internal edges name by string). */
  const follow = (from: number, name: string): number | undefined => {
    for (let e = firstEdge[from / stride]; e < firstEdge[from / stride + 1]; e += ES) {
      if (strings[edges[e + EN]] === name) return edges[e + ET];
    }
  };
  for (let i = 0; i < nodes.length; i += stride) {
    const type = types[nodes[i + T]];
    const bytes = nodes[i + S];
    let name = COLLAPSED.has(type) ? "" : strings[nodes[i + N]].slice(0, 70).replaceAll("\n", " ");
    parsed.total += bytes;
    add(parsed.kinds, name ? `${type}: ${name}` : type, bytes);
    if (type !== "closure") continue;
    if (!name && !where.has(i)) { // a V8 builtin: a promise's resolve/reject, an await's continuation, …
      const shared = follow(i, "shared");
      const builtin = shared === undefined ? undefined : follow(shared, "builtin_name");
      if (builtin !== undefined) name = `(builtin ${strings[nodes[builtin + N]]})`;
    }
    add(parsed.closures, `${name || "(anonymous)"} @${where.get(i) ?? "?"}`, bytes);
  }
  return parsed;
}

// ------------------------------------------------------------------------------------ heap access

interface Reply {
  id?: number;
  method?: string;
  params?: { chunk?: string };
  result?: Record<string, unknown>;
  error?: { message: string };
}

/** Just enough of the V8 inspector protocol (Deno). */
class Inspector {
  #id = 0;
  #pending = new Map<number, (reply: Reply) => void>();
  chunks: string[] = [];
  constructor(private ws: WebSocket) {
    ws.onmessage = (event) => {
      const msg = JSON.parse(String(event.data)) as Reply;
      if (msg.id !== undefined) this.#pending.get(msg.id)?.(msg);
      else if (msg.method === "HeapProfiler.addHeapSnapshotChunk") this.chunks.push(msg.params?.chunk ?? "");
    };
  }
  static async open(port: number): Promise<Inspector> {
    const list = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json() as {
      webSocketDebuggerUrl: string;
      url: string;
    }[];
    const ws = new WebSocket((list.find((t) => t.url.endsWith("/main.ts")) ?? list[0]).webSocketDebuggerUrl);
    await new Promise((resolve, reject) => [ws.onopen, ws.onerror] = [resolve, reject]);
    return new Inspector(ws);
  }
  call(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = ++this.#id;
    this.ws.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) =>
      this.#pending.set(
        id,
        (r) => r.error ? reject(new Error(`${method}: ${r.error.message}`)) : resolve(r.result ?? {}),
      )
    );
  }
  close = () => this.ws.close();
}

/** On SIGUSR2: a full GC, `heapStats()` to stats-<n>.json and, unless the mode file says "gc", a snapshot. */
const BUN_WRAPPER = `import { heapStats } from "bun:jsc";
import { readFileSync, writeFileSync } from "node:fs";
const root = ${JSON.stringify(`file://${ROOT}/`)};
const out = process.env.HEAP_OUT_DIR;
let n = 0;
process.on("SIGUSR2", () => {
  const mode = readFileSync(out + "/mode", "utf8");
  n++;
  Bun.gc(true);
  writeFileSync(out + "/stats-" + n + ".json", JSON.stringify(heapStats()));
  if (mode !== "gc") writeFileSync(out + "/" + mode + ".heapsnapshot", Bun.generateHeapSnapshot("v8"));
  writeFileSync(out + "/done-" + n, "");
});
const { runCli } = await import(root + "lib/cli.ts");
const { currentRuntime } = await import(root + "lib/runtime/mod.ts");
const runtime = await currentRuntime();
runtime.exit(await runCli(runtime, runtime.args(), {
  usageWorker: new URL("lib/usage/sqlite_worker.ts", root),
  configWorker: new URL("lib/config/config_worker.ts", root),
  serveWorker: new URL("lib/workers/worker_main.ts", root),
  tokenWorker: new URL("lib/usage/token_count_worker.ts", root),
}));
`;

interface Stats {
  rssKiB: number;
  rssGcKiB: number;
  heapUsed: number;
  bunTypeCounts?: Record<string, number>;
}

/** The server's side: full GCs, heap numbers and snapshots, over the inspector (Deno) or the wrapper (Bun). */
class Heap {
  #signals = 0;
  constructor(private pid: number, private inspector?: Inspector) {}
  async #bun(mode: string): Promise<{ heapSize: number; objectTypeCounts: Record<string, number> }> {
    await Deno.writeTextFile(`${TMP}/mode`, mode);
    const n = ++this.#signals;
    Deno.kill(this.pid, "SIGUSR2");
    while (!(await Deno.stat(`${TMP}/done-${n}`).then(() => true, () => false))) await sleep(100);
    return JSON.parse(await Deno.readTextFile(`${TMP}/stats-${n}.json`));
  }
  /** RSS as the bench samples it, then after a full GC, and the JS heap in use. */
  async stats(): Promise<Stats> {
    const rss = await rssKiB(this.pid);
    if (!this.inspector) {
      const s = await this.#bun("gc");
      return {
        rssKiB: rss,
        rssGcKiB: await rssKiB(this.pid),
        heapUsed: s.heapSize,
        bunTypeCounts: s.objectTypeCounts,
      };
    }
    await this.inspector.call("HeapProfiler.collectGarbage");
    await sleep(500);
    const heapUsed = Number((await this.inspector.call("Runtime.getHeapUsage")).usedSize);
    return { rssKiB: rss, rssGcKiB: await rssKiB(this.pid), heapUsed };
  }
  async snapshot(label: string): Promise<Parsed> {
    const file = `${TMP}/${label}.heapsnapshot`;
    if (this.inspector) {
      this.inspector.chunks = [];
      await this.inspector.call("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
      await Deno.writeTextFile(file, this.inspector.chunks.join(""));
      this.inspector.chunks = [];
    } else await this.#bun(label);
    const text = await Deno.readTextFile(file);
    log(`${label}: snapshot ${(text.length / 1e6).toFixed(1)} MB`);
    return parseSnapshot(text);
  }
}

// ------------------------------------------------------------------------------------------------ run

function diff(open: Map<string, Kind>, base: Map<string, Kind>, n: number): [string, number, number][] {
  return [...open].map(([key, k]): [string, number, number] => {
    const b = base.get(key) ?? { count: 0, bytes: 0 };
    return [key, (k.count - b.count) / n, (k.bytes - b.bytes) / n];
  }).sort((a, b) => b[2] - a[2]);
}
const row = (key: string, count: number, bytes: number) =>
  `${count.toFixed(2).padStart(9)} ${bytes.toFixed(0).padStart(8)}  ${key}`;
const kb = (bytes: number, n: number) => `${bytes >= 0 ? "+" : ""}${(bytes / n / 1000).toFixed(1)} KB`;

/** Starts the streams client; resolves once it printed its "ready" line. */
async function holdStreams(
  url: string,
  streams: number,
): Promise<{ probe: Deno.ChildProcess; ready: number; failed: number }> {
  const args = `hold --url ${url} --token ${TOKEN} --streams ${streams} --chunks 1000000 --interval 1000`;
  const probe = spawn(
    "probe",
    [
      ...["deno", "run", "-A", `${ROOT}/bench/stream_probe.ts`, ...args.split(" ")],
      ...["--batch", "250", "--ready-timeout", "20000"],
    ],
    {},
    true,
  );
  const lines = probe.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  while (!buffered.includes("\n")) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`probe ended early: ${await new Response(probe.stderr).text()}`);
    buffered += value;
  }
  log(`probe: ${buffered.trim()}`);
  lines.releaseLock();
  probe.stdout.cancel().catch(() => {}); // the "end" line is not needed
  return {
    probe,
    ...(JSON.parse(buffered.slice(0, buffered.indexOf("\n"))) as { ready: number; failed: number }),
  };
}

/** Closes the client's stdin, so it drops its streams and exits; gives the gateway time to wind them up. */
async function releaseStreams(probe: Deno.ChildProcess): Promise<void> {
  await probe.stdin.close().catch(() => {});
  await Promise.race([probe.status, sleep(10_000)]);
  await sleep(3_000);
}

async function main(): Promise<void> {
  const [upPort, gwPort, inspectPort] = [freePort(), freePort(), freePort()];
  spawn("upstream", ["deno", "run", "-A", `${ROOT}/bench/fake_upstream.ts`, "--port", String(upPort)]);
  await waitOk(`http://127.0.0.1:${upPort}/healthz`);
  const serve = ["serve", "--config", `${ROOT}/bench/config.yaml`, "--port", String(gwPort)];
  const env = {
    BENCH_UPSTREAM_URL: `http://127.0.0.1:${upPort}`,
    BENCH_DATA_DIR: TMP,
    BENCH_TOKEN: TOKEN,
    HEAP_OUT_DIR: TMP,
    BUN_CONFIG_MAX_HTTP_REQUESTS: "65535",
  };
  let argv = ["deno", "run", "-A", `--inspect=127.0.0.1:${inspectPort}`, "main.ts", ...serve];
  if (RUNTIME === "bun") {
    const which = ["-y", "bun@1.4.5", "-e", "console.log(process.execPath)"];
    const out = await new Deno.Command("npx", { args: which, stdout: "piped" }).output();
    await Deno.writeTextFile(`${TMP}/bun_wrapper.ts`, BUN_WRAPPER);
    argv = [new TextDecoder().decode(out.stdout).trim(), `${TMP}/bun_wrapper.ts`, ...serve];
  }
  const gateway = spawn(`gw-${RUNTIME}`, argv, env);
  const url = `http://127.0.0.1:${gwPort}/v1/chat/completions`;
  await waitOk(url, chatInit({}));
  log(`gateway ${RUNTIME} pid ${gateway.pid} ready; warming`);
  for (let i = 0; i < 50; i++) await (await fetch(url, chatInit({}))).text();
  await Promise.all(Array.from({ length: 20 }, async () => {
    await (await fetch(url, chatInit({ stream: true, bench_chunks: 5, bench_interval_ms: 2 }))).text();
  }));
  // And 20 held streams the client drops, as at the end: the first drop loads code (the token estimator).
  const warm = await holdStreams(url, 20);
  await releaseStreams(warm.probe);
  const inspector = RUNTIME === "deno" ? await Inspector.open(inspectPort) : undefined;
  const heap = new Heap(gateway.pid, inspector);
  await sleep(1_000);
  // RSS and heap numbers before any snapshot (a snapshot grows the RSS); the snapshot diff is open vs closed.
  const base = await heap.stats();
  const { probe, ready, failed } = await holdStreams(url, STREAMS);
  await sleep(2_000);
  const opened = await heap.stats();
  await inspector?.call("Debugger.enable"); // for Debugger.getScriptSource below
  const open = await heap.snapshot("open");
  await releaseStreams(probe);
  const closed = await heap.snapshot("closed");

  const n = Math.max(1, ready);
  console.log(`\n## ${RUNTIME}: ${ready} streams open (${failed} failed); per open stream:`);
  console.log(`RSS (sampled as the bench does)        ${kb((opened.rssKiB - base.rssKiB) * 1024, n)}`);
  console.log(`RSS after a full GC                    ${kb((opened.rssGcKiB - base.rssGcKiB) * 1024, n)}`);
  const used = inspector ? "Runtime.getHeapUsage().usedSize" : "heapStats().heapSize";
  console.log(`JS heap, ${used.padEnd(30)}${kb(opened.heapUsed - base.heapUsed, n)}`);
  console.log(`snapshot self sizes, open − closed     ${kb(open.total - closed.total, n)}`);
  console.log(`\n   count/s  bytes/s  kind, open − closed (top ${TOP} by bytes per stream)`);
  for (const [key, c, b] of diff(open.kinds, closed.kinds, n).slice(0, TOP)) console.log(row(key, c, b));

  const sources = new Map<string, string[]>();
  const place = async (key: string): Promise<string> => {
    const m = /@(\d+):(\d+):(\d+)$/.exec(key);
    if (!m) return key.replace(/ @\?$/, "");
    const [, id, line, col] = m;
    if (inspector && !sources.has(id)) {
      const src = await inspector.call("Debugger.getScriptSource", { scriptId: id }).catch(() => ({}));
      sources.set(id, String((src as { scriptSource?: string }).scriptSource ?? "").split("\n"));
    }
    const file = (open.scripts.get(id) ?? `script ${id}`).replace(`file://${ROOT}/`, "").replace(
      /^.*\/npm\//,
      "npm:",
    );
    const code = (sources.get(id)?.[Number(line)] ?? "").slice(Number(col), Number(col) + 60).trim();
    return `${key.slice(0, key.lastIndexOf(" @"))} @ ${file}:${Number(line) + 1}${code ? `  | ${code}` : ""}`;
  };
  console.log(
    `\n   count/s  bytes/s  closure @ emitted JS file:line | code there (top 30 by count per stream)`,
  );
  const closures = diff(open.closures, closed.closures, n).sort((a, b) => b[1] - a[1]).slice(0, 30);
  for (const [key, c, b] of closures) if (c > 0) console.log(row(await place(key), c, b));

  if (opened.bunTypeCounts && base.bunTypeCounts) {
    console.log(`\n   count/s  heapStats().objectTypeCounts, open − base (top 30 per stream)`);
    const counts = Object.entries(opened.bunTypeCounts)
      .map(([k, v]): [string, number] => [k, (v - (base.bunTypeCounts?.[k] ?? 0)) / n])
      .sort((a, b) => b[1] - a[1]).slice(0, 30);
    for (const [k, c] of counts) console.log(`${c.toFixed(2).padStart(9)}  ${k}`);
  }
  inspector?.close();
}

try {
  await main();
} finally {
  await cleanup();
  log(`logs and snapshots: ${TMP}`);
}
