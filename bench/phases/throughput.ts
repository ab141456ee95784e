/**
 * Throughput phase: `wrk -t1 -c50` against each target in interleaved rounds (so drift in background load
 * spreads over every target), with the server's CPU time per request from /proc.
 *
 * @module
 */
import { cpuMicros, log, pinned, run, sleep, TMP } from "../harness/process.ts";
import type { AsSut, Target } from "../harness/servers.ts";
import { CHAT_BODY, LOADGEN_CPU, PLAN, TOKEN, WRK_CONNECTIONS } from "../harness/settings.ts";

/** One wrk run. */
export interface WrkResult {
  requests: number;
  seconds: number;
  rps: number;
  errors: number;
  non2xx: number;
  p50Ms: number;
  p99Ms: number;
  /** The server's CPU µs per request in this run (throughput rounds only). */
  cpuUsPerRequest?: number;
}

export const WRK_LUA = `${TMP}/post.lua`;
await Deno.writeTextFile(
  WRK_LUA,
  `wrk.method = "POST"
wrk.body = ${JSON.stringify(CHAT_BODY)}
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer ${TOKEN}"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH_JSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
`,
);

export async function wrk(url: string, seconds: number): Promise<WrkResult> {
  const out = await run(
    pinned(LOADGEN_CPU, ["wrk", "-t1", `-c${WRK_CONNECTIONS}`, `-d${seconds}s`, "-s", WRK_LUA, url]),
    { timeoutMs: (seconds + 30) * 1000 },
  );
  const line = out.stdout.split("\n").find((l) => l.startsWith("BENCH_JSON "));
  if (!line) throw new Error(`wrk failed: ${(out.stderr || out.stdout).slice(0, 300)}`);
  const j = JSON.parse(line.slice("BENCH_JSON ".length)) as Record<string, number>;
  const secs = j.duration_us / 1e6;
  return {
    requests: j.requests,
    seconds: secs,
    rps: j.requests / secs,
    errors: j.errors,
    non2xx: j.non2xx,
    p50Ms: j.p50_us / 1000,
    p99Ms: j.p99_us / 1000,
  };
}

/** The throughput of every live target (an entry each, even with no rounds). */
export async function measureThroughput(
  live: readonly Target[],
  rounds: number,
  asSut: AsSut,
): Promise<Record<string, { runs: WrkResult[]; cpuUsPerRequest: number; error?: string }>> {
  const throughput: Record<string, { runs: WrkResult[]; cpuUsPerRequest: number; error?: string }> = {};
  for (const t of live) throughput[t.key] = { runs: [], cpuUsPerRequest: NaN };
  const cpuTotals: Record<string, { us: number; requests: number }> = {};
  for (let r = 0; r < rounds; r++) {
    for (const t of live) {
      const entry = throughput[t.key];
      if (entry.error) continue;
      const url = `${t.server!.base}/v1/chat/completions`;
      log(`throughput round ${r + 1}/${PLAN.rounds}: ${t.key}`);
      await asSut(t, async () => {
        try {
          if (r === 0) await wrk(url, PLAN.warmSeconds);
          await sleep(300);
          const c0 = await cpuMicros(t.server!.pid);
          const result = await wrk(url, PLAN.wrkSeconds);
          const c1 = await cpuMicros(t.server!.pid);
          entry.runs.push({ ...result, cpuUsPerRequest: (c1 - c0) / result.requests });
          const total = cpuTotals[t.key] ??= { us: 0, requests: 0 };
          total.us += c1 - c0;
          total.requests += result.requests;
          entry.cpuUsPerRequest = total.us / total.requests;
        } catch (err) {
          entry.error = err instanceof Error ? err.message : String(err);
        }
      });
    }
  }
  return throughput;
}
