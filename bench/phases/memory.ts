/**
 * Memory phase: a fresh server per (target, N), so earlier phases' heap does not blur the baseline; N streams
 * held open by bench/stream_probe.ts; the growth of VmRSS per open stream.
 *
 * @module
 */
import type { HoldResult } from "../stream_probe.ts";
import { log, rssKiB, shq, sleep } from "../harness/process.ts";
import { chatInit, type Server, type Target } from "../harness/servers.ts";
import { BENCH_DIR, LOADGEN_CPU, PIN, TOKEN } from "../harness/settings.ts";
import { probe } from "./streams.ts";

/** Memory with N open streams. */
export interface HoldMeasure {
  streams: number;
  ready: number;
  failed: number;
  rssBeforeKiB: number;
  rssOpenKiB: number;
  kbPerStream: number;
  openMs: number;
  errors: string[];
}

export async function holdStreams(server: Server, n: number): Promise<HoldMeasure> {
  // Settle the fresh server: a few requests and streams, then the baseline.
  for (let i = 0; i < 50; i++) await (await fetch(`${server.base}/v1/chat/completions`, chatInit())).text();
  await probe([
    "timing",
    "--url",
    `${server.base}/v1/chat/completions`,
    "--token",
    TOKEN,
    "--streams",
    "20",
    "--concurrency",
    "10",
    "--chunks",
    "5",
    "--interval",
    "2",
    "--warmup",
    "0",
  ], 60_000);
  await sleep(1_000);
  const before = await rssKiB(server.pid);
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${PIN ? `taskset -c ${LOADGEN_CPU} ` : ""}deno run -A ${
        shq(`${BENCH_DIR}/stream_probe.ts`)
      } hold --url ${
        shq(`${server.base}/v1/chat/completions`)
      } --token ${TOKEN} --streams ${n} --chunks 1000000 --interval 1000 --batch 250 --ready-timeout 20000`,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const nextResult = async (): Promise<HoldResult> => {
    while (true) {
      const nl = buffered.indexOf("\n");
      if (nl >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (line.startsWith("{")) return JSON.parse(line) as HoldResult;
        continue;
      }
      const { value, done } = await lines.read();
      if (done) throw new Error(`hold probe ended early: ${(await stderr).slice(0, 300)}`);
      buffered += value;
    }
  };
  const timeout = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, 180_000);
  try {
    const ready = await nextResult();
    await sleep(2_000);
    const samples = [];
    for (let i = 0; i < 3; i++) {
      samples.push(await rssKiB(server.pid));
      await sleep(500);
    }
    const open = samples.sort((a, b) => a - b)[1];
    await child.stdin.close();
    await Promise.race([nextResult().catch(() => undefined), sleep(10_000)]);
    return {
      streams: n,
      ready: ready.ready,
      failed: ready.failed,
      rssBeforeKiB: before,
      rssOpenKiB: open,
      // Per stream actually open: a server that could not open them all is judged on the ones it did.
      kbPerStream: ((open - before) * 1.024) / Math.max(1, ready.ready),
      openMs: ready.openMs,
      errors: ready.errors,
    };
  } finally {
    clearTimeout(timeout);
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await lines.cancel().catch(() => {});
  }
}

/**
 * Memory with each of `holds` open streams, for every live target but `direct`; every server started is also
 * pushed onto `servers`, so the run stops it even if this throws.
 */
export async function measureMemory(
  live: readonly Target[],
  holds: readonly number[],
  servers: Server[],
): Promise<Record<string, (HoldMeasure | { streams: number; error: string })[]>> {
  const memory: Record<string, (HoldMeasure | { streams: number; error: string })[]> = {};
  for (const t of live) {
    if (t.key === "direct") continue;
    memory[t.key] = [];
    for (const n of holds) {
      log(`memory with ${n} open streams: ${t.key}`);
      let server: Server | undefined;
      try {
        server = await t.start!(`${t.key}-hold-${n}`);
        servers.push(server);
        memory[t.key].push(await holdStreams(server, n));
      } catch (err) {
        memory[t.key].push({ streams: n, error: err instanceof Error ? err.message : String(err) });
      } finally {
        await server?.stop();
      }
    }
  }
  return memory;
}
