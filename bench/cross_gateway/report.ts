/**
 * The cross-gateway benchmark's report: the JSON (every cell, the machine, the background load and the setup)
 * and the Markdown tables printed at the end, where a gateway's latency is shown as what it adds to the mock's
 * own, measured directly right before each cell.
 *
 * @module
 */
import type { TargetResult } from "./load.ts";
import { run } from "./plumbing.ts";
import {
  BUN_VERSION,
  CPUS,
  DIRECT_SECONDS,
  MOCK_CHUNKS,
  MOCK_DELAY_MS,
  type Plan,
  PORTKEY_NODE_SERVER,
  PORTKEY_VERSION,
  SHARED_CORES,
} from "./settings.ts";

/** What the run learned besides its results, for the report. */
export interface RunFacts {
  /** `performance.now()` when the run began. */
  t0: number;
  bun: string | undefined;
  /** Node's version as Portkey's install found it, if it got that far. */
  portkeyNode: string | undefined;
  busyStart: number;
  busyEnd: number;
  loadStart: string;
  sharingStart: string[];
}

const ms = (x: number) => (Math.abs(x) < 10 ? x.toFixed(2) : x.toFixed(1));
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${ms(Math.abs(x))}`;

/** One shape's Markdown table: req/s and added p50 / p99 per concurrency, CPU per request at the highest. */
function table(results: TargetResult[], concurrency: number[], stream: boolean): string {
  const head = `| target | ${
    concurrency.map((c) => `c=${c} req/s | c=${c} added p50 / p99 ms`).join(" | ")
  } | CPU µs/req (c=${concurrency.at(-1)}) |`;
  const rule = `| --- | ${concurrency.map(() => "---: | ---:").join(" | ")} | ---: |`;
  const rows = results.map((r) => {
    if (r.notRun) return `| ${r.key} | not run (below) ${"| — ".repeat(concurrency.length * 2)}|`;
    const cols = concurrency.map((c) => {
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
    const last = r.cells.find((x) => x.stream === stream && x.concurrency === concurrency.at(-1));
    return `| ${r.key} | ${cols.join(" | ")} | ${last ? Math.round(last.cpuUsPerRequest) : "—"} |`;
  });
  return [head, rule, ...rows].join("\n");
}

/** The JSON written to `plan.out` (its `durationS` counts up to this call). */
export async function buildReport(plan: Plan, facts: RunFacts, results: TargetResult[]) {
  const othersCores = results.flatMap((r) => r.cells.map((c) => c.othersCores)).filter(Number.isFinite);
  const othersMean = othersCores.reduce((a, b) => a + b, 0) / Math.max(1, othersCores.length);
  const othersMax = Math.max(0, ...othersCores);
  const wrkShare = Math.max(
    ...results.flatMap((r) => r.cells.map((c) => c.wrkCpuShare)).filter(Number.isFinite),
  );
  return {
    date: new Date().toISOString(),
    command: `deno run -A bench/cross_gateway.ts${Deno.args.length ? " " + Deno.args.join(" ") : ""}`,
    durationS: Math.round((performance.now() - facts.t0) / 1000),
    machine: {
      cpus: CPUS,
      model: /model name\s*:\s*(.*)/.exec(await Deno.readTextFile("/proc/cpuinfo"))?.[1] ?? "unknown",
      kernel: Deno.osRelease(),
      deno: Deno.version.deno,
      bun: facts.bun ? (await run([facts.bun, "--version"])).stdout.trim() : "unavailable",
      node: facts.portkeyNode ?? (await run(["node", "--version"])).stdout.trim(),
      wrk: (await run(["wrk", "--version"])).stdout.split("\n")[0].replace(/ Copyright.*/, ""),
      layout: "no CPU pinning: the target, the mock and wrk share both CPUs",
    },
    load: {
      backgroundBusyStart: facts.busyStart,
      backgroundBusyEnd: facts.busyEnd,
      loadavgStart: facts.loadStart,
      loadavgEnd: Deno.loadavg().map((x) => x.toFixed(2)).join(" "),
      busiestProcessesAtStart: facts.sharingStart,
      othersCoresDuringCells: { mean: othersMean, max: othersMax },
    },
    setup: {
      mock: {
        delayMs: MOCK_DELAY_MS,
        streamContentEvents: MOCK_CHUNKS,
        runtime: facts.bun ? `bun ${BUN_VERSION}` : "deno",
      },
      seconds: plan.seconds,
      warmSeconds: plan.warm,
      concurrency: plan.concurrency,
      allWorkers: plan.allWorkers,
      gatewayConfig: "bench/config.yaml",
      portkey: { version: PORTKEY_VERSION, honoNodeServer: PORTKEY_NODE_SERVER },
      maxWrkCpuShareOfOneCore: wrkShare,
    },
    results,
  };
}

export type Report = Awaited<ReturnType<typeof buildReport>>;

/** Prints both tables, the footnote, the rows not run and the run's load summary (stdout, Markdown). */
export function printReport(report: Report, plan: Plan): void {
  const { results, load } = report;
  const concurrency = plan.concurrency;
  console.log(
    `### Non-streamed chat completion (mock answers after ${MOCK_DELAY_MS} ms)\n\n${
      table(results, concurrency, false)
    }\n`,
  );
  console.log(
    `### Streamed (headers and first event after ${MOCK_DELAY_MS} ms, then ${MOCK_CHUNKS} content events; time to the ` +
      `stream's end)\n\n${table(results, concurrency, true)}\n`,
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
    `Background load ${(load.backgroundBusyStart * 100).toFixed(0)}% → ${
      (load.backgroundBusyEnd * 100).toFixed(0)
    }% of both CPUs, load average ` +
      `${load.loadavgStart} → ${load.loadavgEnd}; wrk used at most ${
        (report.setup.maxWrkCpuShareOfOneCore * 100).toFixed(0)
      }% of one core; other processes used ${
        load.othersCoresDuringCells.mean.toFixed(2)
      } cores on average during the measured runs ` +
      `(at most ${load.othersCoresDuringCells.max.toFixed(2)}); ${report.durationS} s. JSON: ${plan.out}`,
  );
}
