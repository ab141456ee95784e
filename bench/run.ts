/**
 * `deno task bench`: the gateway's benchmark, side by side with a fake upstream measured directly and a bare
 * fetch-and-forward proxy on each runtime, written to `bench/RESULTS.md` (and the raw numbers to
 * `bench/RESULTS.json`).
 *
 * Targets: `direct` (the fake upstream itself), `bare-deno`, `bare-bun` (bench/bare_proxy.ts), `edge-deno` (the
 * same bare proxy served through the gateway's `node:http` edge; not in quick runs), `floor-bun`
 * (bench/minimal_gateway.ts: only what every gateway request must do, on Bun; the JSON phases of full runs),
 * `gw-deno` (`deno run -A main.ts serve`) and `gw-bun` (the Bun single binary `dist/gateway`, built when missing
 * or older than the sources). A target that cannot start is reported as such in every table.
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
 * Flags: `--quick` (~3 min), `--root DIR` (gateway checkout, default the repo), `--out FILE`, `--no-pin`,
 * `--skip-bun`, `--no-install`, `--phases throughput,latency,streams,memory,cold` (a subset runs only those),
 * `--shared` (adds `gw-deno-limited`/`gw-deno-shared` and the same for the binary: a limited and budgeted token
 * on the embedded state, then on Redis + PostgreSQL; see bench/harness/shared_state.ts), `--ratios FILE`
 * (where the regression guard's ratios go; default `ratios.json` beside the report), `--compare FILE` (the
 * regression guard: the quick throughput phase only, compared with FILE; exits 1 on a regression beyond the
 * noise; see bench/harness/ratios.ts).
 *
 * This file is the orchestrator: it starts the fake upstream and the targets, runs the phases in order
 * (bench/phases/), and writes the report (bench/harness/report.ts). Settings, process plumbing, servers and
 * tools are in bench/harness/.
 *
 * @module
 */
import { freePort, log, machineBusy, run, TMP } from "./harness/process.ts";
import { renderReport } from "./harness/report.ts";
import { compareRatios, type RatiosFile, ratiosFromRounds, renderComparison } from "./harness/ratios.ts";
import { machineInfo, type Results } from "./harness/results.ts";
import {
  type AsSut,
  type Server,
  spawnServer,
  startBare,
  startGateway,
  startMinimalGateway,
  type Target,
  waitReady,
} from "./harness/servers.ts";
import {
  BENCH_DIR,
  BUN_VERSION,
  COMPARE,
  LOADGEN_CPU,
  OUT,
  PHASES,
  PIN,
  PLAN,
  QUICK,
  RATIOS_OUT,
  ROOT,
  SHARED,
  state,
  SUT_CPU,
  WRK_CONNECTIONS,
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
  // The guard (--compare) waits as long as a full run: its verdict is only as good as the machine is quiet.
  const quietDeadline = performance.now() + (QUICK && !COMPARE ? 20_000 : 60_000);
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
    // Not in quick runs (the regression guard): it reads off the edge's share, not a regression.
    ...(QUICK ? [] : [{
      key: "edge-deno",
      label: "bare proxy on the gateway's node:http edge",
      runtime: "deno" as const,
      kind: "bare" as const,
      start: (n: string) => startBare("deno", n, "node"),
    }, {
      key: "floor-bun",
      label: "minimal gateway on Bun (bench/minimal_gateway.ts --steps 5)",
      runtime: "bun" as const,
      kind: "bare" as const,
      unavailable: state.bun ? undefined : `Bun ${BUN_VERSION} unavailable`,
      start: (n: string) => startMinimalGateway(n),
      // It buffers each answer whole: a floor for JSON requests, not for streams or memory per stream.
      phases: ["throughput", "latency"],
    }]),
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
    results.targets = targets.map(({ key, label, runtime, kind, unavailable, phases }) => ({
      key,
      label,
      runtime,
      kind,
      unavailable,
      phases,
    }));
    const live = targets.filter((t) => t.server !== undefined);
    const liveIn = (phase: string) => live.filter((t) => t.phases === undefined || t.phases.includes(phase));
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

    // Throughput: interleaved rounds so drift in background load spreads over every target. The guard
    // (--compare) needs only the gateways and their bare proxies.
    results.throughput = {
      direct: { runs: [], cpuUsPerRequest: NaN },
      ...await measureThroughput(
        COMPARE ? live.filter((t) => t.key !== "direct") : live,
        PHASES.has("throughput") ? PLAN.rounds : 0,
        asSut,
      ),
    };
    if (PHASES.has("latency")) {
      results.latency = await measureLatency(liveIn("latency"), PLAN.latencySeconds, asSut);
    }
    if (PHASES.has("streams")) results.streams = await measureStreams(liveIn("streams"), asSut);

    // Memory: a fresh process per (target, N), so earlier phases' heap does not blur the baseline.
    for (const t of live) {
      if (t.key === "direct") continue;
      await t.server!.stop();
    }
    if (PHASES.has("memory")) results.memory = await measureMemory(liveIn("memory"), PLAN.holds, servers);

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

/** The regression guard's ratios of this run (bench/harness/ratios.ts), from its throughput rounds. */
async function ratiosOf(results: Results): Promise<RatiosFile> {
  const runs = Object.fromEntries(Object.entries(results.throughput).map(([key, t]) => [key, t.runs]));
  const { metrics, info, missing } = ratiosFromRounds(runs);
  for (const t of results.targets) {
    const runtime = t.key.replace(/^(gw|bare)-/, "");
    if (t.unavailable && missing[runtime] !== undefined) missing[runtime] = `${t.key}: ${t.unavailable}`;
  }
  const git = async (...args: string[]) => (await run(["git", ...args], { cwd: ROOT })).stdout.trim();
  const dirty = await git("status", "--porcelain", "--", "main.ts", "lib");
  return {
    version: 1,
    date: results.date,
    mode: results.mode,
    plan: { rounds: PLAN.rounds, wrkSeconds: PLAN.wrkSeconds, connections: WRK_CONNECTIONS },
    machine: {
      cpus: results.machine.cpus,
      model: results.machine.model,
      loadavg: results.machine.loadavg,
      deno: results.machine.deno,
      bun: results.machine.bun,
      commit: `${await git("rev-parse", "--short", "HEAD") || "unknown"}${
        dirty ? ` + uncommitted changes in ${dirty.split("\n").length} file(s) of main.ts/lib` : ""
      }`,
      layout: results.layout,
    },
    backgroundBusyStart: results.backgroundBusyStart,
    backgroundBusyEnd: results.backgroundBusyEnd,
    metrics,
    info,
    missing,
  };
}

if (import.meta.main) {
  log(`${QUICK ? "quick" : "full"} run; gateway at ${ROOT}; temp ${TMP}`);
  // Read the baseline first: a missing or broken file should fail before minutes of measuring.
  const baseline = COMPARE ? JSON.parse(await Deno.readTextFile(COMPARE)) as RatiosFile : undefined;
  const results = await main();
  const written: string[] = [];
  if (OUT) {
    const markdown = renderReport(results);
    await Deno.mkdir(OUT.slice(0, OUT.lastIndexOf("/")) || ".", { recursive: true });
    await Deno.writeTextFile(OUT, markdown);
    const json = OUT.replace(/\.md$/, "") + ".json";
    await Deno.writeTextFile(json, JSON.stringify(results, null, 2) + "\n");
    written.push(OUT, json);
    if (!COMPARE) console.log(markdown);
  }
  const ratios = await ratiosOf(results);
  if (PHASES.has("throughput")) {
    await Deno.mkdir(RATIOS_OUT.slice(0, RATIOS_OUT.lastIndexOf("/")) || ".", { recursive: true });
    await Deno.writeTextFile(RATIOS_OUT, JSON.stringify(ratios, null, 2) + "\n");
    written.push(RATIOS_OUT);
  }
  // Keep the written files `deno fmt --check` clean (the repo's check task covers bench/).
  if (written.length > 0) await run(["deno", "fmt", "--quiet", ...written], { cwd: ROOT });
  log(`wrote ${written.join(", ") || "nothing"} in ${results.durationS} s`);
  await Deno.remove(TMP, { recursive: true }).catch(() => {});
  if (baseline) {
    const comparison = compareRatios(baseline, ratios);
    console.log(renderComparison(comparison, COMPARE!));
    if (comparison.failed.length > 0) {
      console.error(`bench --compare: regression against ${COMPARE}: ${comparison.failed.join("; ")}`);
      Deno.exit(1);
    }
  }
}
