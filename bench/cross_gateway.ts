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
 * This file parses the flags and runs the sequence; the parts are in bench/cross_gateway/: settings.ts
 * (constants, the plan, the temp dir), plumbing.ts (processes, /proc CPU accounting, servers), targets.ts (the
 * mock, this gateway's rows, readiness), peers.ts (Portkey, Bifrost, LiteLLM), load.ts (a wrk cell and its
 * CPU accounting) and report.ts (the JSON and the tables).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { measure, type TargetResult } from "./cross_gateway/load.ts";
import {
  installPortkey,
  type PortkeyInstall,
  portkeyTarget,
  triedPeerTargets,
  tryBifrost,
  tryLitellm,
} from "./cross_gateway/peers.ts";
import { busiestProcesses, clockTicks, machineBusy, run, type Server } from "./cross_gateway/plumbing.ts";
import { buildReport, printReport } from "./cross_gateway/report.ts";
import { BENCH_DIR, BUN_VERSION, CPUS, log, type Plan, ROOT, tmpDir } from "./cross_gateway/settings.ts";
import {
  type Client,
  ensureBinary,
  findBun,
  gatewayTarget,
  mockClient,
  startMock,
  type Target,
} from "./cross_gateway/targets.ts";

/** The run's plan from the command line (unknown flags throw, as `parseArgs` is strict). */
function parsePlan(args: string[]): Plan {
  const { values: flags } = parseArgs({
    args,
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
  return {
    out: flags.out ?? `${BENCH_DIR}/CROSS_GATEWAY.json`,
    seconds: Number(flags.seconds),
    warm: Number(flags.warm),
    concurrency: flags.concurrency.split(",").map(Number),
    allWorkers: Number(flags.workers ?? CPUS),
    only: flags.only ? new Set(flags.only.split(",")) : undefined,
    skipPeers: flags["skip-peers"],
  };
}

/** Other work on a 2-core box skews everything: waits (up to a minute) for it to calm down; the last reading. */
async function waitForQuiet(): Promise<number> {
  let busy = await machineBusy(2_000);
  for (const deadline = performance.now() + 60_000; busy > 0.15 && performance.now() < deadline;) {
    log(`background load ${(busy * 100).toFixed(0)}% of all CPUs; waiting for < 15%`);
    busy = await machineBusy(3_000);
  }
  return busy;
}

/** Measures `targets` one at a time (`direct` always, the others as `--only` says), stopping each after. */
async function measureAll(targets: Target[], mock: Server, plan: Plan): Promise<TargetResult[]> {
  const results: TargetResult[] = [];
  const selected = targets.filter((t) => !plan.only || plan.only.has(t.key) || t.key === "direct");
  for (const t of selected) {
    if (t.key === "direct") {
      results.push({ key: t.key, label: t.label, ...await measure(mock, mockClient, false, mock, plan) });
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
      results.push({
        key: t.key,
        label: t.label,
        ...await measure(started.server, started.client, true, mock, plan),
      });
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
  return results;
}

async function main(): Promise<void> {
  const plan = parsePlan(Deno.args);
  tmpDir();
  await clockTicks();
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
  let portkey: PortkeyInstall = { problem: "skipped (--skip-peers)" };
  if (!plan.skipPeers) {
    portkey = await installPortkey();
    peerNotes.bifrost = await tryBifrost();
    peerNotes.litellm = await tryLitellm();
  }

  const mock = await startMock(bun);
  const targets: Target[] = [
    { key: "direct", label: `mock upstream directly (${bun ? `Bun ${BUN_VERSION}` : "Deno"}, 20 ms)` },
    gatewayTarget("deno", 1, undefined, mock),
    gatewayTarget("deno", plan.allWorkers, undefined, mock),
    gatewayTarget("bun", 1, binaryProblem, mock),
    gatewayTarget("bun", plan.allWorkers, binaryProblem, mock),
    portkeyTarget(portkey, mock),
    ...triedPeerTargets(peerNotes),
  ];

  const busyStart = await waitForQuiet();
  const loadStart = Deno.loadavg().map((x) => x.toFixed(2)).join(" ");
  const sharingStart = await busiestProcesses();
  log(`background load ${(busyStart * 100).toFixed(0)}% of all CPUs; load average ${loadStart}`);
  let results: TargetResult[];
  try {
    results = await measureAll(targets, mock, plan);
  } finally {
    await mock.stop();
  }
  const busyEnd = await machineBusy(2_000);

  const report = await buildReport(
    plan,
    { t0, bun, portkeyNode: portkey.node, busyStart, busyEnd, loadStart, sharingStart },
    results,
  );
  await Deno.writeTextFile(plan.out, JSON.stringify(report, null, 2) + "\n");
  if (plan.out.startsWith(ROOT + "/")) await run(["deno", "fmt", "--quiet", plan.out], { cwd: ROOT });
  await Deno.remove(tmpDir(), { recursive: true }).catch(() => {});
  printReport(report, plan);
}

if (import.meta.main) await main();
