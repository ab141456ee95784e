/**
 * Streams phase: stream timing (time to first chunk, per-chunk delay) and chunk integrity, measured by
 * bench/stream_probe.ts run as its own process on the load generator's core.
 *
 * @module
 */
import type { TimingResult } from "../stream_probe.ts";
import { type CommandResult, log, pinned, run } from "../harness/process.ts";
import type { AsSut, Server, Target } from "../harness/servers.ts";
import { BENCH_DIR, LOADGEN_CPU, PLAN, TOKEN } from "../harness/settings.ts";

export async function probe(args: string[], timeoutMs: number): Promise<CommandResult> {
  return await run(pinned(LOADGEN_CPU, ["deno", "run", "-A", `${BENCH_DIR}/stream_probe.ts`, ...args]), {
    timeoutMs,
  });
}

export async function streamTiming(server: Server): Promise<TimingResult> {
  const s = PLAN.streams;
  const common = [
    "--url",
    `${server.base}/v1/chat/completions`,
    "--token",
    TOKEN,
    "--model",
    "bench-chat",
    "--chunks",
    String(s.chunks),
    "--interval",
    String(s.interval),
    "--concurrency",
    String(s.concurrency),
  ];
  const out = await probe(
    ["timing", ...common, "--streams", String(s.streams), "--warmup", String(s.warmup)],
    300_000,
  );
  const line = out.stdout.trim().split("\n").pop() ?? "";
  if (out.code !== 0 || !line.startsWith("{")) {
    throw new Error(`stream probe failed: ${out.stderr.slice(0, 300)}`);
  }
  return JSON.parse(line) as TimingResult;
}

/** Stream timing for every live target. */
export async function measureStreams(
  live: readonly Target[],
  asSut: AsSut,
): Promise<Record<string, TimingResult | { error: string }>> {
  const streams: Record<string, TimingResult | { error: string }> = {};
  for (const t of live) {
    log(`stream timing: ${t.key}`);
    await asSut(t, async () => {
      try {
        streams[t.key] = await streamTiming(t.server!);
      } catch (err) {
        streams[t.key] = { error: err instanceof Error ? err.message : String(err) };
      }
    });
  }
  return streams;
}
