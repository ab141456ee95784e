/**
 * The regression guard's comparison (`deno task bench --compare FILE`), without timing: made-up rounds in,
 * verdicts out. Run with `deno test bench/compare_test.ts`.
 */
import assert from "node:assert/strict";
import {
  compareRatios,
  metric,
  NOISE_FLOOR,
  type RatiosFile,
  ratiosFromRounds,
  relativeNoise,
  renderComparison,
} from "./harness/ratios.ts";

const plan = { rounds: 4, wrkSeconds: 3, connections: 50 };

/** A run whose gw ÷ bare rounds are `rpsRatios` (bare at 10,000 req/s) and gw CPU `cpu` µs per round. */
function run(rpsRatios: number[], cpu: number[], bunRatios = rpsRatios, bunCpu = cpu) {
  const rounds = (ratios: number[], cpus: number[], bareCpu: number) => ({
    gw: ratios.map((r, i) => ({ rps: 10_000 * r, cpuUsPerRequest: cpus[i] })),
    bare: ratios.map(() => ({ rps: 10_000, cpuUsPerRequest: bareCpu })),
  });
  const deno = rounds(rpsRatios, cpu, 70);
  const bun = rounds(bunRatios, bunCpu, 35);
  const { metrics, info, missing } = ratiosFromRounds({
    "gw-deno": deno.gw,
    "bare-deno": deno.bare,
    "gw-bun": bun.gw,
    "bare-bun": bun.bare,
  });
  return { mode: "quick", plan, metrics, info, missing } satisfies Partial<RatiosFile>;
}

Deno.test("noise is 1.4826 × MAD relative to the median, and one outlying round barely moves it", () => {
  assert.deepStrictEqual(relativeNoise([0.3]), 0);
  assert.ok(Math.abs(relativeNoise([0.9, 1.0, 1.1, 1.0]) - 1.4826 * 0.05) < 1e-12);
  assert.ok(Math.abs(relativeNoise([0.9, 1.0, 1.1, 3.0]) - 1.4826 * 0.1 / 1.05) < 1e-12);
  assert.deepStrictEqual(metric("x", "higher", [3, 1, 2]).value, 2);
});

Deno.test("ratios pair the gateway's and the bare proxy's rounds", () => {
  const r = run([0.30, 0.32, 0.31, 0.33], [200, 210, 205, 195]);
  assert.deepStrictEqual(Object.keys(r.metrics).sort(), [
    "cpu:gw-bun",
    "cpu:gw-deno",
    "rps:gw-bun/bare-bun",
    "rps:gw-deno/bare-deno",
  ]);
  assert.deepStrictEqual(r.metrics["rps:gw-deno/bare-deno"].value.toFixed(3), "0.315");
  assert.deepStrictEqual(r.metrics["rps:gw-deno/bare-deno"].better, "higher");
  assert.deepStrictEqual(r.metrics["cpu:gw-deno"].value, 202.5);
  assert.deepStrictEqual(r.metrics["cpu:gw-deno"].better, "lower");
  assert.deepStrictEqual(r.info["cpu:gw-deno/bare-deno"].value.toFixed(3), (202.5 / 70).toFixed(3));
  const noBun = ratiosFromRounds({ "gw-deno": [{ rps: 1 }], "bare-deno": [{ rps: 2 }] });
  assert.deepStrictEqual(noBun.missing.bun, "gw-bun has no rounds");
});

Deno.test("a change within the noise passes", () => {
  const baseline = run([0.30, 0.32, 0.31, 0.33], [200, 210, 205, 195]);
  // 3% lower throughput ratio, 4% more CPU: inside the 5% floor and the rounds' spread.
  const current = run([0.295, 0.31, 0.30, 0.315], [208, 216, 212, 204]);
  const c = compareRatios(baseline, current);
  assert.deepStrictEqual(c.failed, []);
  assert(c.rows.every((r) => r.verdict === "ok"), JSON.stringify(c.rows));
  assert.match(renderComparison(c, "base.json"), /PASS/);
});

Deno.test("a drop beyond the noise fails and names the ratio that dropped", () => {
  const baseline = run([0.30, 0.32, 0.31, 0.33], [200, 210, 205, 195]);
  // Deno's gateway lost about 20% of its throughput ratio; Bun's and the CPU numbers did not move.
  const current = run([0.25, 0.255, 0.26, 0.25], [200, 210, 205, 195], [0.30, 0.32, 0.31, 0.33]);
  const c = compareRatios(baseline, current);
  assert.deepStrictEqual(c.failed.length, 1);
  assert.match(c.failed[0], /requests\/s gw-deno ÷ bare-deno dropped from 0\.315 to 0\.253/);
  const row = c.rows.find((r) => r.key === "rps:gw-deno/bare-deno")!;
  assert.deepStrictEqual(row.verdict, "regressed");
  assert.deepStrictEqual(c.rows.find((r) => r.key === "rps:gw-bun/bare-bun")!.verdict, "ok");
  assert.match(
    renderComparison(c, "base.json"),
    /FAIL: 1 regression\(s\):\n {2}- requests\/s gw-deno ÷ bare-deno/,
  );
});

Deno.test("CPU per request regresses when it rises, not when it falls", () => {
  const baseline = run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]);
  const slower = compareRatios(baseline, run([0.3, 0.3, 0.3, 0.3], [240, 240, 240, 240]));
  assert.deepStrictEqual(slower.failed.length, 2); // deno and bun both rose 20%
  assert.match(slower.failed[0], /CPU µs\/request gw-\w+ rose from 200\.000 to 240\.000/);
  const faster = compareRatios(baseline, run([0.3, 0.3, 0.3, 0.3], [160, 160, 160, 160]));
  assert.deepStrictEqual(faster.failed, []);
  assert(faster.rows.filter((r) => r.key.startsWith("cpu:")).every((r) => r.verdict === "improved"));
});

Deno.test("the allowance is the rounds' noise when that exceeds the floor", () => {
  // Noisy rounds (±20% around the median; noise 1.4826 × 0.03 / 0.30 ≈ 14.8% per run, allowed ≈ 29.7%).
  const noisy = [0.24, 0.30, 0.36, 0.30];
  const scaled = (k: number) => noisy.map((x) => x * k);
  const flat = [200, 200, 200, 200];
  const baseline = run(noisy, flat);
  const within = compareRatios(baseline, run(scaled(0.85), flat));
  assert.deepStrictEqual(within.failed, []);
  const row = within.rows.find((r) => r.key === "rps:gw-deno/bare-deno")!;
  assert(row.allowed > NOISE_FLOOR && Math.abs(row.allowed - 2 * 1.4826 * 0.1) < 1e-9, String(row.allowed));
  const beyond = compareRatios(baseline, run(scaled(0.65), flat));
  assert.deepStrictEqual(beyond.failed.length, 2); // deno and bun
  assert.match(beyond.failed[0], /dropped .*-35\.0%; allowed 29\.7%, noise 14\.8% \+ 14\.8%/);
});

Deno.test("with steady rounds the A/A floor decides", () => {
  const baseline = run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]);
  const tenPercentMoreCpu = run([0.3, 0.3, 0.3, 0.3], [220, 220, 220, 220]);
  assert.deepStrictEqual(compareRatios(baseline, tenPercentMoreCpu).failed, []); // NOISE_FLOOR is 15%
  const strict = compareRatios(baseline, tenPercentMoreCpu, 0.05);
  assert.deepStrictEqual(strict.failed.length, 2);
  assert.match(strict.failed[0], /rose .*\+10\.0%; allowed 5\.0%, floor 5\.0%/);
});

Deno.test("a guarded ratio the run could not measure fails", () => {
  const baseline = run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]);
  const current = run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]);
  delete (current.metrics as Record<string, unknown>)["rps:gw-bun/bare-bun"];
  delete (current.metrics as Record<string, unknown>)["cpu:gw-bun"];
  current.missing.bun = "gw-bun: Bun 1.4.5 unavailable";
  const c = compareRatios(baseline, current);
  assert.deepStrictEqual(c.failed.length, 2);
  assert.match(c.failed[0], /gw-bun.*not measured \(gw-bun: Bun 1\.4\.5 unavailable\)/);
});

Deno.test("a baseline measured under other background load warns", () => {
  const baseline = { ...run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]), backgroundBusyStart: 0.02 };
  const current = { ...run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]), backgroundBusyStart: 0.5 };
  const c = compareRatios(baseline, current);
  assert.deepStrictEqual(c.failed, []);
  assert.match(c.warnings[0], /background load before measuring was 2% .* and 50% now/);
});

Deno.test("a baseline of another plan warns", () => {
  const baseline = { ...run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]), mode: "full" };
  baseline.plan = { rounds: 3, wrkSeconds: 10, connections: 50 };
  const c = compareRatios(baseline, run([0.3, 0.3, 0.3, 0.3], [200, 200, 200, 200]));
  assert.deepStrictEqual(c.failed, []);
  assert.match(c.warnings[0], /compare like with like/);
});
