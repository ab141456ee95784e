/**
 * CPU profile of the Deno gateway under wrk load, through the V8 inspector (Deno 2.9 has no `--cpu-prof`):
 * starts the fake upstream (CPU 0) and `deno run --inspect main.ts serve` (CPU 1), drives it with
 * `wrk -t1 -c50` for `--seconds`, samples with the inspector's Profiler, and prints the top functions by self
 * time and by inclusive time, and self time per file. The raw `.cpuprofile` (loadable in Chrome DevTools) is
 * written next to the output.
 *
 * With `--alloc`, V8's sampling heap profiler instead (every sampled allocation, whether or not a collection
 * has freed it since): bytes allocated per request, by function, by file and inclusive in `lib/`, which is
 * what the collector's work per request follows.
 *
 * Usage: `deno run -A bench/profile.ts [--seconds 10] [--alloc] [--out /tmp/gateway.cpuprofile]`
 *
 * @module
 */
import { parseArgs } from "node:util";

/** A node of V8's CPU profile. */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

/** V8's CPU profile (`Profiler.stop`). */
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values } = parseArgs({
  args: Deno.args,
  options: {
    seconds: { type: "string", default: "10" },
    alloc: { type: "boolean", default: false },
    out: { type: "string", default: "/tmp/gateway.cpuprofile" },
  },
});
const BENCH = decodeURIComponent(new URL(".", import.meta.url).pathname).replace(/\/$/, "");
const ROOT = decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/$/, "");
const TOKEN = "gw-bench-token-0123456789abcdef";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function port(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const p = (l.addr as Deno.NetAddr).port;
  l.close();
  return p;
}

async function until(url: string, init?: RequestInit): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      const r = await fetch(url, init);
      await r.body?.cancel();
      if (r.ok) return;
    } catch { /* not yet */ }
    await sleep(50);
  }
  throw new Error(`${url} never answered 200`);
}

/** Labels a frame `function (file:line)`, with paths shortened to the repo or the npm package. */
function label(f: ProfileNode["callFrame"]): string {
  const url = f.url.replace(`file://${ROOT}/`, "").replace(/^.*registry\.npmjs\.org\//, "npm:");
  return `${f.functionName || "(anonymous)"} (${url || "native"}${url ? `:${f.lineNumber + 1}` : ""})`;
}

function fileOf(f: ProfileNode["callFrame"]): string {
  if (!f.url) return f.functionName.startsWith("(") ? f.functionName : "(native)";
  return f.url.replace(`file://${ROOT}/`, "").replace(/^.*registry\.npmjs\.org\/([^/]+\/[^/]+).*$/, "npm:$1");
}

function report(profile: CpuProfile): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const files = new Map<string, number>();
  let all = 0;
  let idle = 0;
  let inspector = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0;
    const leaf = byId.get(profile.samples[i])!;
    // Idle time, and the inspector's own cost (Deno reports every fetch to an attached inspector), are left out.
    if (leaf.callFrame.functionName === "(idle)") {
      idle += dt;
      continue;
    }
    let fromInspector = false;
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (f.url.includes("inspector_network_bridge") || f.functionName.startsWith("op_inspector")) {
        fromInspector = true;
        break;
      }
    }
    if (fromInspector) {
      inspector += dt;
      continue;
    }
    all += dt;
    self.set(label(leaf.callFrame), (self.get(label(leaf.callFrame)) ?? 0) + dt);
    files.set(fileOf(leaf.callFrame), (files.get(fileOf(leaf.callFrame)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const key = label(byId.get(id)!.callFrame);
      if (seen.has(key)) continue;
      seen.add(key);
      total.set(key, (total.get(key) ?? 0) + dt);
    }
  }
  const top = (m: Map<string, number>, n: number, filter = (_: string) => true) =>
    [...m].filter(([k]) => filter(k)).sort((a, b) => b[1] - a[1]).slice(0, n)
      .map(([k, v]) => `${(100 * v / all).toFixed(1).padStart(5)}%  ${k}`).join("\n");
  return [
    `main thread: ${(all / 1e6).toFixed(2)} s busy (the 100% below), ${(idle / 1e6).toFixed(2)} s idle, ` +
    `${(inspector / 1e6).toFixed(2)} s in the inspector's own fetch reporting (left out)`,
    "",
    "== self time, top 30 ==",
    top(self, 30),
    "",
    "== self time per file, top 20 ==",
    top(files, 20),
    "",
    "== inclusive time, gateway code (lib/), top 30 ==",
    top(total, 30, (k) => k.includes("lib/")),
    "",
    "== inclusive time, everything, top 25 ==",
    top(total, 25),
  ].join("\n");
}

/** A node of V8's sampled heap profile (`HeapProfiler.stopSampling`). */
interface AllocationNode {
  callFrame: ProfileNode["callFrame"];
  selfSize: number;
  children: AllocationNode[];
}

/** Bytes allocated per request by function (self), by file and inclusive in `lib/`. */
function allocationReport(head: AllocationNode, requests: number): string {
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  let inspector = 0;
  const walk = (node: AllocationNode, stack: string[], viaInspector: boolean) => {
    const f = node.callFrame;
    const fromInspector = viaInspector || f.url.includes("inspector_network_bridge") ||
      f.functionName.startsWith("op_inspector");
    const key = label(f);
    const here = stack.includes(key) ? stack : [...stack, key];
    if (fromInspector) inspector += node.selfSize;
    else if (node.selfSize > 0) {
      all += node.selfSize;
      self.set(key, (self.get(key) ?? 0) + node.selfSize);
      files.set(fileOf(f), (files.get(fileOf(f)) ?? 0) + node.selfSize);
      for (const k of here) total.set(k, (total.get(k) ?? 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, here, fromInspector);
  };
  walk(head, [], false);
  const top = (m: Map<string, number>, n: number, filter = (_: string) => true) =>
    [...m].filter(([k]) => filter(k)).sort((a, b) => b[1] - a[1]).slice(0, n)
      .map(([k, v]) => `${(v / requests).toFixed(0).padStart(7)} B  ${k}`).join("\n");
  const sum = (m: Map<string, number>, filter: (k: string) => boolean) =>
    [...m].reduce((n, [k, v]) => n + (filter(k) ? v : 0), 0);
  return [
    `${requests} requests: ${(all / requests).toFixed(0)} bytes allocated per request (sampled), ` +
    `${(inspector / requests).toFixed(0)} more by the inspector's own fetch reporting (left out); ` +
    `${(sum(files, (k) => k.startsWith("lib/")) / requests).toFixed(0)} of them by the gateway's code (lib/)`,
    "",
    "== bytes per request by function (self), top 30 ==",
    top(self, 30),
    "",
    "== by file, top 20 ==",
    top(files, 20),
    "",
    "== gateway code (lib/) by function (self), top 30 ==",
    top(self, 30, (k) => k.includes("lib/")),
    "",
    "== inclusive, gateway code (lib/), top 30 ==",
    top(total, 30, (k) => k.includes("lib/")),
  ].join("\n");
}

if (import.meta.main) {
  const bun = await new Deno.Command("npx", {
    args: ["-y", "bun@1.4.5", "-e", "console.log(process.execPath)"],
    stderr: "null",
  }).output().then((o) => new TextDecoder().decode(o.stdout).trim()).catch(() => "");
  const upPort = port();
  const gwPort = port();
  const inspectPort = port();
  const dataDir = await Deno.makeTempDir({ prefix: "gateway-profile-" });
  const upstream = new Deno.Command("taskset", {
    args: [
      "-c",
      "0",
      ...(bun ? [bun] : ["deno", "run", "-A"]),
      `${BENCH}/fake_upstream.ts`,
      "--port",
      String(upPort),
    ],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const gateway = new Deno.Command("taskset", {
    args: "-c 1 deno run -A".split(" ").concat([
      `--inspect=127.0.0.1:${inspectPort}`,
      "main.ts",
      "serve",
      "--config",
      `${BENCH}/config.yaml`,
      "--port",
      String(gwPort),
    ]),
    cwd: ROOT,
    env: { BENCH_UPSTREAM_URL: `http://127.0.0.1:${upPort}`, BENCH_DATA_DIR: dataDir, BENCH_TOKEN: TOKEN },
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    const chat = {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "bench-chat", messages: [{ role: "user", content: "Hello, gateway!" }] }),
    };
    await until(`http://127.0.0.1:${upPort}/healthz`);
    await until(`http://127.0.0.1:${gwPort}/v1/chat/completions`, chat);
    const lua = `${dataDir}/post.lua`;
    await Deno.writeTextFile(
      lua,
      `wrk.method = "POST"\nwrk.body = ${JSON.stringify(chat.body)}\n` +
        `wrk.headers["Content-Type"] = "application/json"\nwrk.headers["Authorization"] = "Bearer ${TOKEN}"\n`,
    );
    const wrk = (seconds: number) =>
      new Deno.Command("taskset", {
        args: [
          "-c",
          "0",
          "wrk",
          "-t1",
          "-c50",
          `-d${seconds}s`,
          "-s",
          lua,
          `http://127.0.0.1:${gwPort}/v1/chat/completions`,
        ],
        stdout: "piped",
        stderr: "null",
      }).output().then((o) => {
        const text = new TextDecoder().decode(o.stdout);
        return {
          rps: /Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? "?",
          requests: Number(/(\d+) requests in/.exec(text)?.[1] ?? 0),
        };
      });
    console.error(`warm-up: ${(await wrk(3)).rps} RPS`);

    const targets = await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json() as {
      webSocketDebuggerUrl: string;
    }[];
    const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
    await new Promise((r) => ws.onopen = r);
    let nextId = 1;
    const pending = new Map<number, (result: unknown) => void>();
    ws.onmessage = (e) => {
      const msg = JSON.parse(e.data) as { id?: number; result?: unknown };
      if (msg.id !== undefined) pending.get(msg.id)?.(msg.result);
    };
    const send = (method: string, params: Record<string, unknown> = {}) =>
      new Promise<unknown>((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      });
    if (values.alloc) {
      await send("HeapProfiler.enable");
      await send("HeapProfiler.startSampling", {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      const { rps, requests } = await wrk(Number(values.seconds));
      const { profile } = await send("HeapProfiler.stopSampling") as { profile: { head: AllocationNode } };
      ws.close();
      console.log(`gateway under wrk -t1 -c50 while sampled: ${rps} RPS\n`);
      console.log(allocationReport(profile.head, requests));
    } else {
      await send("Profiler.enable");
      await send("Profiler.setSamplingInterval", { interval: 200 });
      await send("Profiler.start");
      const { rps } = await wrk(Number(values.seconds));
      const { profile } = await send("Profiler.stop") as { profile: CpuProfile };
      ws.close();
      await Deno.writeTextFile(values.out, JSON.stringify(profile));
      console.log(`gateway under wrk -t1 -c50 while profiled: ${rps} RPS; profile: ${values.out}\n`);
      console.log(report(profile));
    }
  } finally {
    gateway.kill("SIGKILL");
    upstream.kill("SIGKILL");
    await gateway.status;
    await upstream.status;
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}
