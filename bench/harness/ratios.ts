/**
 * The regression guard's numbers: from the throughput phase's interleaved wrk rounds, the gateway's requests/s
 * as a share of the bare proxy's on the same runtime (`gw-deno ÷ bare-deno`, `gw-bun ÷ bare-bun`) and the
 * gateway's CPU µs per request, each as the median over the rounds with the rounds' own spread as its noise.
 * `deno task bench` writes them to `ratios.json` (beside the report, or `--ratios FILE`); `--compare FILE`
 * measures again and fails when one moved the wrong way by more than the noise (`compareRatios`).
 *
 * Noise of one run, per metric: the robust spread of its per-round values relative to their median,
 * `1.4826 × MAD / median` (MAD: the median absolute deviation from the median; for normally spread rounds this
 * estimates one round's σ, and one disturbed round barely moves it, where the range would take it whole). A
 * metric regressed when it moved the wrong way by more than the baseline's noise plus the current run's (for
 * 4 rounds each about 2.3 standard deviations of the difference of two medians), and at least by the A/A floor
 * (`NOISE_FLOOR`, measured here: see bench/README.md, "Regression guard").
 *
 * Pure functions only (no settings, no processes), so `bench/compare_test.ts` runs them without timing.
 *
 * @module
 */

/** One guarded metric of one run. */
export interface RatioMetric {
  /** What it is, for people ("requests/s gw-deno ÷ bare-deno"). */
  label: string;
  /** Which way is worse: a throughput ratio regresses when it drops, CPU per request when it rises. */
  better: "higher" | "lower";
  /** Median over the rounds. */
  value: number;
  /** The per-round values (paired rounds: the gateway and its bare proxy measured in the same round). */
  rounds: number[];
  /** 1.4826 × MAD / median of `rounds`; 0 with one round. */
  noise: number;
}

/** The ratios file (`bench/ratios.json`). */
export interface RatiosFile {
  version: 1;
  date: string;
  /** `quick` or `full`, and the throughput plan the rounds came from. */
  mode: string;
  plan: { rounds: number; wrkSeconds: number; connections: number };
  /** Where it ran: CPUs, load, runtimes, commit. */
  machine: Record<string, string>;
  backgroundBusyStart: number;
  backgroundBusyEnd: number;
  /** Guarded metrics by key (`rps:gw-deno/bare-deno`, `cpu:gw-deno`, …). */
  metrics: Record<string, RatioMetric>;
  /** Measured but not guarded (the bare proxies' CPU per request, the CPU ratio), for reading. */
  info: Record<string, RatioMetric>;
  /** Targets that were not measured, and why. */
  missing: Record<string, string>;
}

/**
 * The smallest change called a regression, whatever the rounds' spread: the largest A/A change of the
 * steadiest metric measured on this shared 2-core machine (the Bun gateway's CPU µs/request, 158–182 over six
 * quick throughput runs of one binary, 2026-11-29; the rounds' own noise said ±8% where two runs differed by
 * 11%; see bench/README.md, "Regression guard"), rounded up.
 */
export const NOISE_FLOOR = 0.15;

export const median = (xs: readonly number[]): number => {
  const s = [...xs].filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** 1.4826 × the median absolute deviation of `xs`, relative to their median (0 for fewer than two values). */
export function relativeNoise(xs: readonly number[]): number {
  const finite = xs.filter(Number.isFinite);
  if (finite.length < 2) return 0;
  const m = median(finite);
  return m > 0 ? (1.4826 * median(finite.map((x) => Math.abs(x - m)))) / m : 0;
}

export function metric(label: string, better: "higher" | "lower", rounds: number[]): RatioMetric {
  const finite = rounds.filter(Number.isFinite);
  return { label, better, value: median(finite), rounds: finite, noise: relativeNoise(finite) };
}

/** One wrk round of the throughput phase (`WrkResult` plus the server's CPU in that round). */
export interface RoundLike {
  rps: number;
  cpuUsPerRequest?: number;
}

/**
 * The guarded metrics from the throughput phase's rounds per target: for each runtime whose gateway and bare
 * proxy both have rounds, the per-round requests/s ratio and the gateway's CPU µs per request.
 */
export function ratiosFromRounds(
  runs: Record<string, readonly RoundLike[]>,
  runtimes: readonly string[] = ["deno", "bun"],
): Pick<RatiosFile, "metrics" | "info" | "missing"> {
  const metrics: Record<string, RatioMetric> = {};
  const info: Record<string, RatioMetric> = {};
  const missing: Record<string, string> = {};
  for (const runtime of runtimes) {
    const gw = runs[`gw-${runtime}`] ?? [];
    const bare = runs[`bare-${runtime}`] ?? [];
    const paired = Math.min(gw.length, bare.length);
    if (paired === 0) {
      missing[runtime] = gw.length === 0 ? `gw-${runtime} has no rounds` : `bare-${runtime} has no rounds`;
      continue;
    }
    const ratios = [];
    for (let r = 0; r < paired; r++) ratios.push(gw[r].rps / bare[r].rps);
    metrics[`rps:gw-${runtime}/bare-${runtime}`] = metric(
      `requests/s gw-${runtime} ÷ bare-${runtime}`,
      "higher",
      ratios,
    );
    const gwCpu = gw.map((x) => x.cpuUsPerRequest ?? NaN);
    const bareCpu = bare.map((x) => x.cpuUsPerRequest ?? NaN);
    metrics[`cpu:gw-${runtime}`] = metric(`CPU µs/request gw-${runtime}`, "lower", gwCpu);
    info[`cpu:bare-${runtime}`] = metric(`CPU µs/request bare-${runtime}`, "lower", bareCpu);
    info[`cpu:gw-${runtime}/bare-${runtime}`] = metric(
      `CPU µs/request gw-${runtime} ÷ bare-${runtime}`,
      "lower",
      gwCpu.slice(0, paired).map((x, r) => x / bareCpu[r]),
    );
  }
  return { metrics, info, missing };
}

/** What `compareRatios` reads of a run. */
export type ComparedRun =
  & Pick<RatiosFile, "metrics" | "plan" | "mode">
  & Partial<Pick<RatiosFile, "missing" | "backgroundBusyStart">>;

/** One metric's comparison. */
export interface MetricComparison {
  key: string;
  label: string;
  baseline?: number;
  current?: number;
  /** (current − baseline) / baseline. */
  change: number;
  /** The largest change in the wrong direction that counts as noise. */
  allowed: number;
  verdict: "ok" | "regressed" | "improved" | "missing" | "new";
  why: string;
}

/** The whole comparison; `failed` lists the regressed (or no longer measured) metrics' labels. */
export interface Comparison {
  rows: MetricComparison[];
  failed: string[];
  warnings: string[];
}

const pct = (x: number) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`;

/**
 * Compares `current` against `baseline`, metric by metric: a change in the wrong direction larger than
 * `max(floor, baseline noise + current noise)` is a regression; a guarded metric in the baseline that the
 * current run did not measure fails too (a guard that could not look must not pass).
 */
export function compareRatios(
  baseline: ComparedRun,
  current: ComparedRun,
  floor = NOISE_FLOOR,
): Comparison {
  const rows: MetricComparison[] = [];
  const failed: string[] = [];
  const warnings: string[] = [];
  const busy = [baseline.backgroundBusyStart, current.backgroundBusyStart];
  if (busy.every((x) => x !== undefined && Number.isFinite(x)) && Math.abs(busy[0]! - busy[1]!) > 0.2) {
    warnings.push(
      `background load before measuring was ${
        (busy[0]! * 100).toFixed(0)
      }% of all CPUs for the baseline and ` +
        `${
          (busy[1]! * 100).toFixed(0)
        }% now: other work on the machine biases CPU per request and throughput ` +
        `beyond what the rounds' spread shows; re-run when the machine is quiet`,
    );
  }
  if (
    baseline.plan.rounds !== current.plan.rounds || baseline.plan.wrkSeconds !== current.plan.wrkSeconds ||
    baseline.plan.connections !== current.plan.connections
  ) {
    warnings.push(
      `the baseline was measured with ${baseline.plan.rounds} × ${baseline.plan.wrkSeconds} s rounds at ` +
        `-c${baseline.plan.connections} (${baseline.mode}), this run with ${current.plan.rounds} × ` +
        `${current.plan.wrkSeconds} s at -c${current.plan.connections} (${current.mode}): compare like with like`,
    );
  }
  for (const [key, base] of Object.entries(baseline.metrics)) {
    const now = current.metrics[key];
    if (now === undefined || !Number.isFinite(now.value)) {
      const runtime = /-(\w+)(\/|$)/.exec(key)?.[1] ?? "";
      const reason = current.missing?.[runtime] ?? "not measured in this run";
      rows.push({
        key,
        label: base.label,
        baseline: base.value,
        change: NaN,
        allowed: NaN,
        verdict: "missing",
        why: reason,
      });
      failed.push(`${base.label}: not measured (${reason})`);
      continue;
    }
    const change = (now.value - base.value) / base.value;
    const spread = base.noise + now.noise;
    const allowed = Math.max(floor, spread);
    const worse = base.better === "higher" ? -change : change;
    const basis = spread > floor
      ? `noise ${pct(base.noise).slice(1)} + ${pct(now.noise).slice(1)}`
      : `floor ${pct(floor).slice(1)}`;
    let verdict: MetricComparison["verdict"] = "ok";
    let why = `within ±${(allowed * 100).toFixed(1)}% (${basis})`;
    if (worse > allowed) {
      verdict = "regressed";
      why = `${base.better === "higher" ? "dropped" : "rose"} ${(worse * 100).toFixed(1)}%, more than the ` +
        `${(allowed * 100).toFixed(1)}% allowed (${basis})`;
      failed.push(
        `${base.label} ${base.better === "higher" ? "dropped" : "rose"} from ${base.value.toFixed(3)} to ` +
          `${now.value.toFixed(3)} (${pct(change)}; allowed ${(allowed * 100).toFixed(1)}%, ${basis})`,
      );
    } else if (-worse > allowed) {
      verdict = "improved";
      why = `better by ${(-worse * 100).toFixed(1)}%, beyond the noise (${basis})`;
    }
    rows.push({
      key,
      label: base.label,
      baseline: base.value,
      current: now.value,
      change,
      allowed,
      verdict,
      why,
    });
  }
  for (const [key, now] of Object.entries(current.metrics)) {
    if (baseline.metrics[key] !== undefined) continue;
    rows.push({
      key,
      label: now.label,
      current: now.value,
      change: NaN,
      allowed: NaN,
      verdict: "new",
      why: "not in the baseline",
    });
  }
  return { rows, failed, warnings };
}

/** The comparison as a Markdown table plus its verdict lines. */
export function renderComparison(c: Comparison, baselineFile: string): string {
  const f = (x: number | undefined) => x === undefined || !Number.isFinite(x) ? "—" : x.toFixed(3);
  const lines = [
    `Regression guard against ${baselineFile}:`,
    "",
    "| metric | baseline | now | change | allowed | verdict |",
    "| --- | ---: | ---: | ---: | ---: | --- |",
    ...c.rows.map((r) =>
      `| ${r.label} | ${f(r.baseline)} | ${f(r.current)} | ${
        Number.isFinite(r.change) ? pct(r.change) : "—"
      } | ${Number.isFinite(r.allowed) ? `±${(r.allowed * 100).toFixed(1)}%` : "—"} | ${
        r.verdict === "regressed" || r.verdict === "missing" ? `**${r.verdict.toUpperCase()}**` : r.verdict
      }: ${r.why} |`
    ),
    "",
    ...c.warnings.map((w) => `warning: ${w}`),
    c.failed.length === 0
      ? "PASS: no guarded ratio moved the wrong way by more than the noise."
      : `FAIL: ${c.failed.length} regression(s):\n${c.failed.map((x) => `  - ${x}`).join("\n")}`,
  ];
  return lines.join("\n");
}
