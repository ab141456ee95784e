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
 * `--skip-bun`, `--no-install`, `--phases throughput,latency,streams,memory,cold` (a subset runs only those),
 * `--shared` (adds `gw-deno-limited`/`gw-deno-shared` and the same for the binary: a limited and budgeted token
 * on the embedded state, then on Redis + PostgreSQL; see bench/harness/shared_state.ts).
 *
 * This file is the orchestrator: it starts the fake upstream and the targets, runs the phases in order
 * (bench/phases/), and writes the report (bench/harness/report.ts). Settings, process plumbing, servers and
 * tools are in bench/harness/.
 *
 * @module
 */
import { freePort, log, machineBusy, run, TMP } from "./harness/process.ts";
import { renderReport } from "./harness/report.ts";
import { machineInfo, type Results } from "./harness/results.ts";
import {
  type AsSut,
  type Server,
  spawnServer,
  startBare,
  startGateway,
  type Target,
  waitReady,
} from "./harness/servers.ts";
import {
  BENCH_DIR,
  BUN_VERSION,
  LOADGEN_CPU,
  OUT,
  PHASES,
  PIN,
  PLAN,
  QUICK,
  ROOT,
  SHARED,
  state,
  SUT_CPU,
} from "./harness/settings.ts";
import { dropSharedState } from "./harness/shared_state.ts";
import { ensureBinary, ensureTools, findBun } from "./harness/tools.ts";
import { measureColdStart } from "./phases/cold_start.ts";
import { measureLatency } from "./phases/latency.ts";
import { measureMemory } from "./phases/memory.ts";
import { measureStreams } from "./phases/streams.ts";
import { measureThroughput } from "./phases/throughput.ts";

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
  state.bun = await findBun();
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
    state.bun
      ? [state.bun, `${BENCH_DIR}/fake_upstream.ts`, "--port", String(upPort)]
      : ["deno", "run", "-A", `${BENCH_DIR}/fake_upstream.ts`, "--port", String(upPort)],
    upPort,
    { cpu: LOADGEN_CPU },
  );
  state.upstreamUrl = upstream.base;
  await waitReady(upstream);
  results.machine.upstream = state.bun ? `fake upstream on bun ${BUN_VERSION}` : "fake upstream on deno";

  const targets: Target[] = [
    {
      key: "direct",
      label: "direct to fake upstream",
      runtime: state.bun ? "bun" : "deno",
      kind: "upstream",
    },
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
      unavailable: state.bun ? undefined : `Bun ${BUN_VERSION} unavailable`,
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
  if (SHARED) {
    // The same limits and budget on the embedded state and on Redis + PostgreSQL, on each runtime.
    for (const runtime of ["deno", "bun"] as const) {
      for (
        const [suffix, file, what] of [
          ["limited", "config_limited.yaml", "limits + budget, in-memory + SQLite"],
          ["shared", "config_shared.yaml", "limits + budget, Redis + PostgreSQL"],
        ]
      ) {
        targets.push({
          key: `gw-${runtime}-${suffix}`,
          label: `gateway (${runtime === "deno" ? "deno run main.ts" : "Bun binary"}; ${what})`,
          runtime,
          kind: "gateway",
          unavailable: runtime === "bun" ? binaryProblem : undefined,
          start: (n) => startGateway(runtime, n, file),
        });
      }
    }
  }
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
    const asSut: AsSut = async (t: Target, fn: () => Promise<void>) => {
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
    results.throughput = await measureThroughput(live, PHASES.has("throughput") ? PLAN.rounds : 0, asSut);
    if (PHASES.has("latency")) results.latency = await measureLatency(live, PLAN.latencySeconds, asSut);
    if (PHASES.has("streams")) results.streams = await measureStreams(live, asSut);

    // Memory: a fresh process per (target, N), so earlier phases' heap does not blur the baseline.
    for (const t of live) {
      if (t.key === "direct") continue;
      await t.server!.stop();
    }
    if (PHASES.has("memory")) results.memory = await measureMemory(live, PLAN.holds, servers);

    // Cold start: the Bun binary (the target) and `deno run main.ts` (for reference).
    if (PHASES.has("cold")) results.coldStart = await measureColdStart(PLAN.coldRuns, binaryProblem);
  } finally {
    for (const s of servers) await s.stop();
    if (SHARED) await dropSharedState();
  }
  results.backgroundBusyEnd = await machineBusy(2_000);
  results.durationS = Math.round((performance.now() - t0) / 1000);
  return results;
}

if (import.meta.main) {
  log(`${QUICK ? "quick" : "full"} run; gateway at ${ROOT}; temp ${TMP}`);
  const results = await main();
  const markdown = renderReport(results);
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
