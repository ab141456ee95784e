/**
 * RESULTS.md: the measured numbers of one run, table by table, each judged against the issue's targets.
 *
 * @module
 */
import type { Results } from "./results.ts";
import { LATENCY_PROCESSES, LATENCY_RPS, PLAN, TARGETS } from "./settings.ts";

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
/** Each runtime's floor: the most its gateway could do on the same run's machine (see the throughput text). */
const FLOOR_OF = { deno: "edge-deno", bun: "floor-bun" } as const;
const FLOORS: readonly string[] = Object.values(FLOOR_OF);
/** Why a live target has no row in `phase`: not one of its phases, or the phase was not run. */
const notRun = (t: { phases?: readonly string[] }, phase: string) =>
  t.phases !== undefined && !t.phases.includes(phase)
    ? `not in this phase (${t.phases.join(", ")} only)`
    : "not run";
const isError = (x: object | undefined): x is { error: string } => x !== undefined && "error" in x;

/** The report of `r` as Markdown. */
export function renderReport(r: Results): string {
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
      `proxy on the same runtime. \`edge-deno\` is the bare proxy served through the gateway's own \`node:http\` ` +
      `edge (lib/runtime/node_http_edge.ts, kept on Deno for its connection limits): its share of bare-deno is ` +
      `as far as gw-deno can go on that edge. \`floor-bun\` is bench/minimal_gateway.ts on Bun, doing only what ` +
      `every gateway request must (body parsed, token hashed, upstream body and answer rebuilt, a log line, a ` +
      `message to a worker): its share of bare-bun is as far as gw-bun can go.`,
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
    // A floor's share of the bare proxy is the ceiling of its runtime's gateway: shown, not judged.
    const shared = t.kind === "gateway" || FLOORS.includes(t.key);
    const vsBare = shared ? rps[t.key] / bare : NaN;
    out.push(
      `| ${name(t.key)} | ${f(rps[t.key], 0)} | ${f(Math.min(...rs), 0)}–${f(Math.max(...rs), 0)} | ` +
        `${errs} / ${non2xx} | ${f(vsDirect * 100, 1)}% | ${shared ? `${f(vsBare * 100, 1)}%` : ""} | ` +
        `${t.kind === "gateway" ? `≥ ${TARGETS.throughputRatio * 100}% of ${bareOf(t.runtime)}` : ""} | ` +
        `${
          t.kind === "gateway"
            ? verdict(Number.isFinite(vsBare) ? vsBare >= TARGETS.throughputRatio : undefined)
            : ""
        } |`,
    );
  }
  out.push("");
  const againstFloor = (["deno", "bun"] as const).flatMap((runtime) => {
    const floor = FLOOR_OF[runtime];
    const share = rps[`gw-${runtime}`] / rps[floor];
    return Number.isFinite(share) ? [`gw-${runtime} ÷ ${floor} ${f(share * 100, 1)}%`] : [];
  });
  if (againstFloor.length > 0) {
    out.push(`Against the floors measured in this run (medians): ${againstFloor.join(", ")}.`, "");
  }

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
      `${TARGETS.addedP99Ms.deno} ms on Deno and ≤ ${TARGETS.addedP99Ms.bun} ms on Bun.`,
    "",
    `| target | sent / failed | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | added p50 | added p99 | result |`,
    `| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |`,
  );
  for (const t of r.targets) {
    const l = r.latency[t.key];
    if (!l || isError(l)) {
      out.push(
        `| ${name(t.key)} | — | | | | | | | | ${
          isError(l) ? l.error : t.unavailable ?? notRun(t, "latency")
        } |`,
      );
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
              verdict(a99 <= TARGETS.addedP99Ms[t.runtime] && l.failed === 0)
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
      out.push(
        `| ${name(t.key)} | — | | | | | | | | ${
          isError(x) ? x.error : t.unavailable ?? notRun(t, "streams")
        } |`,
      );
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
      `samples). KB = 1,000 bytes. Target at 5,000 streams (gateways): ≤ ${TARGETS.kbPerStream.deno} KB per stream ` +
      `on Deno, ≤ ${TARGETS.kbPerStream.bun} KB on Bun.`,
    "",
    `| target | streams open | RSS before MiB | RSS open MiB | KB / open stream | target | result |`,
    `| --- | ---: | ---: | ---: | ---: | --- | --- |`,
  );
  for (const t of r.targets) {
    const rows = r.memory[t.key];
    if (!rows) {
      if (t.key !== "direct") {
        out.push(`| ${name(t.key)} | — | | | | | ${t.unavailable ?? notRun(t, "memory")} |`);
      }
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
          `${judged ? `≤ ${TARGETS.kbPerStream[t.runtime]} KB` : ""} | ${
            judged
              ? verdict(row.ready === row.streams && row.kbPerStream <= TARGETS.kbPerStream[t.runtime]) +
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
