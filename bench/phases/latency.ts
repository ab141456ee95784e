/**
 * Latency phase: a fixed 1,000 RPS from five independent `h2load` processes (one connection each, 200 RPS,
 * started at uneven offsets so their timers do not fire together), per-request times from their log files,
 * and the server's CPU time per request at that rate.
 *
 * @module
 */
import { summarize, type Summary } from "../stream_probe.ts";
import { type CommandResult, cpuMicros, log, pinned, round, run, sleep, TMP } from "../harness/process.ts";
import type { AsSut, Server, Target } from "../harness/servers.ts";
import { CHAT_BODY, LATENCY_PROCESSES, LATENCY_RPS, LOADGEN_CPU, TOKEN } from "../harness/settings.ts";

/** Latency at a fixed rate. */
export interface LatencyResult {
  sent: number;
  failed: number;
  rate: number;
  ms: Summary & { p999: number };
  cpuUsPerRequest: number;
}

export async function fixedRate(server: Server, seconds: number): Promise<LatencyResult> {
  const body = `${TMP}/chat.json`;
  await Deno.writeTextFile(body, CHAT_BODY);
  const warm = 1;
  const perProcess = LATENCY_RPS / LATENCY_PROCESSES;
  const logs: string[] = [];
  const cpu0 = await cpuMicros(server.pid);
  const started = performance.now();
  const runs: Promise<CommandResult>[] = [];
  for (let i = 0; i < LATENCY_PROCESSES; i++) {
    const logFile = `${TMP}/h2load-${i}.log`;
    await Deno.remove(logFile).catch(() => {});
    logs.push(logFile);
    runs.push(run(
      pinned(LOADGEN_CPU, [
        "h2load",
        "--h1",
        "-t1",
        "-c1",
        `--rps=${perProcess}`,
        `-D`,
        String(seconds),
        `--warm-up-time=${warm}`,
        "-d",
        body,
        "-H",
        "content-type: application/json",
        "-H",
        `authorization: Bearer ${TOKEN}`,
        `--log-file=${logFile}`,
        `${server.base}/v1/chat/completions`,
      ]),
      { timeoutMs: (seconds + warm + 30) * 1000 },
    ));
    // Independent processes, started at uneven offsets: their 5 ms timers interleave instead of firing together.
    await sleep(1.3 + i * 0.4);
  }
  const outs = await Promise.all(runs);
  const elapsed = (performance.now() - started) / 1000;
  const cpu1 = await cpuMicros(server.pid);
  const latencies: number[] = [];
  let failed = 0;
  for (const [i, file] of logs.entries()) {
    let text = "";
    try {
      text = await Deno.readTextFile(file);
    } catch {
      throw new Error(
        `h2load produced no log: ${outs[i].stderr.slice(0, 300) || outs[i].stdout.slice(-300)}`,
      );
    }
    for (const line of text.split("\n")) {
      if (!line) continue;
      const [, status, micros] = line.split("\t");
      if (status === "200") latencies.push(Number(micros) / 1000);
      else failed++;
    }
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const p999 = sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.999) - 1)] ?? NaN;
  return {
    sent: latencies.length + failed,
    failed,
    rate: (latencies.length + failed) / seconds,
    ms: { ...summarize(latencies), p999: round(p999, 3) },
    cpuUsPerRequest: (cpu1 - cpu0) / (LATENCY_RPS * elapsed),
  };
}

/** Latency at the fixed rate for every live target. */
export async function measureLatency(
  live: readonly Target[],
  seconds: number,
  asSut: AsSut,
): Promise<Record<string, LatencyResult | { error: string }>> {
  const latency: Record<string, LatencyResult | { error: string }> = {};
  for (const t of live) {
    log(`latency at ${LATENCY_RPS} RPS: ${t.key}`);
    await asSut(t, async () => {
      try {
        latency[t.key] = await fixedRate(t.server!, seconds);
      } catch (err) {
        latency[t.key] = { error: err instanceof Error ? err.message : String(err) };
      }
    });
  }
  return latency;
}
