/**
 * A streaming client for the benchmark, run as its own process (`deno run -A bench/stream_probe.ts …`).
 *
 * `timing` mode opens `--warmup` unmeasured streams, then `--streams` SSE streams, `--concurrency` at a time, each asking the fake upstream for
 * `--chunks` content chunks every `--interval` ms, and measures:
 * - time to first chunk: request sent → first SSE event received;
 * - per-chunk delay: for content chunk `i`, (arrival_i − upstream send time_i) minus the smallest such
 *   offset on that stream, i.e. how late each chunk is beyond the stream's fastest transit. The fake writes its
 *   send time (monotonic, relative to the stream's start) into each chunk, so upstream timer jitter cancels;
 * - chunk integrity: every content chunk `c0…c(n−1)` arrives once, in order, in its own SSE event (a merged
 *   event would carry two markers), followed by `[DONE]`.
 *
 * `hold` mode opens `--streams` slow streams (a chunk every `--interval` ms) in batches of `--batch`, waits
 * until every one has its first chunk (a batch stalled for `--ready-timeout` ms stops the opening), prints `{"ready":n,…}` and keeps reading until stdin closes, then
 * aborts them all and prints the final tally. The orchestrator samples the server's RSS in between.
 *
 * Output: one JSON line per phase on stdout.
 *
 * @module
 */
import { parseArgs } from "node:util";

/** Percentile summary in milliseconds. */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

/** What `timing` mode prints. */
export interface TimingResult {
  mode: "timing";
  streams: number;
  streamsOk: number;
  errors: string[];
  ttfcMs: Summary;
  chunkDelayMs: Summary;
  chunksExpected: number;
  chunksReceived: number;
  lost: number;
  merged: number;
  duplicated: number;
  outOfOrder: number;
  missingDone: number;
  /** Content events that arrived in the same read as the previous one (TCP coalescing, not an SSE merge). */
  coalescedReads: number;
}

/** What `hold` mode prints, once when ready and once at the end. */
export interface HoldResult {
  mode: "hold";
  phase: "ready" | "end";
  ready: number;
  failed: number;
  errors: string[];
  openMs: number;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

/** Summarises samples (any order) into percentiles. */
export function summarize(values: number[]): Summary {
  const sorted = Float64Array.from(values).sort();
  const arr = Array.from(sorted);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    n: arr.length,
    p50: round(percentile(arr, 50)),
    p90: round(percentile(arr, 90)),
    p99: round(percentile(arr, 99)),
    max: round(arr.length ? arr[arr.length - 1] : NaN),
    mean: round(arr.reduce((a, b) => a + b, 0) / (arr.length || 1)),
  };
}

interface ProbeOptions {
  url: string;
  token: string;
  model: string;
  chunks: number;
  interval: number;
}

const decoder = new TextDecoder();
const MARKER = /"content":"c(\d+)\|([0-9.]+)"/g;

function requestInit(o: ProbeOptions, signal?: AbortSignal): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${o.token}` },
    body: JSON.stringify({
      model: o.model,
      messages: [{ role: "user", content: "Stream me some chunks." }],
      stream: true,
      bench_chunks: o.chunks,
      bench_interval_ms: o.interval,
    }),
    signal,
  };
}

/** Per-stream measurements of `timing` mode. */
interface StreamStats {
  ttfc: number;
  offsets: number[];
  seen: number[];
  merged: number;
  coalesced: number;
  done: boolean;
}

async function oneTimedStream(o: ProbeOptions): Promise<StreamStats> {
  const started = performance.now();
  const response = await fetch(o.url, requestInit(o));
  if (response.status !== 200 || response.body === null) {
    const text = await response.text();
    throw new Error(`status ${response.status}: ${text.slice(0, 200)}`);
  }
  const stats: StreamStats = { ttfc: NaN, offsets: [], seen: [], merged: 0, coalesced: 0, done: false };
  let buffer = "";
  for await (const bytes of response.body) {
    const now = performance.now();
    if (Number.isNaN(stats.ttfc)) stats.ttfc = now - started;
    buffer += decoder.decode(bytes, { stream: true });
    let end: number;
    let inThisRead = 0;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (event.includes("data: [DONE]")) {
        stats.done = true;
        continue;
      }
      let markers = 0;
      for (const m of event.matchAll(MARKER)) {
        markers++;
        stats.seen.push(Number(m[1]));
        stats.offsets.push(now - started - Number(m[2]));
      }
      if (markers > 1) stats.merged += markers - 1;
      if (markers > 0 && ++inThisRead > 1) stats.coalesced++;
    }
  }
  return stats;
}

async function timing(
  o: ProbeOptions,
  streams: number,
  concurrency: number,
  warmup: number,
): Promise<TimingResult> {
  // Warm-up streams (connections, JIT on both sides) are not measured.
  let warmed = 0;
  const warm = async () => {
    while (warmed < warmup) {
      warmed++;
      await oneTimedStream(o).catch(() => undefined);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, warmup) }, warm));
  const ttfc: number[] = [];
  const delays: number[] = [];
  const errors: string[] = [];
  const result: TimingResult = {
    mode: "timing",
    streams,
    streamsOk: 0,
    errors,
    ttfcMs: summarize([]),
    chunkDelayMs: summarize([]),
    chunksExpected: streams * o.chunks,
    chunksReceived: 0,
    lost: 0,
    merged: 0,
    duplicated: 0,
    outOfOrder: 0,
    missingDone: 0,
    coalescedReads: 0,
  };
  let next = 0;
  const worker = async () => {
    while (next < streams) {
      next++;
      try {
        const s = await oneTimedStream(o);
        ttfc.push(s.ttfc);
        const base = Math.min(...s.offsets);
        for (const offset of s.offsets) delays.push(offset - base);
        const unique = new Set(s.seen);
        result.chunksReceived += s.seen.length;
        result.duplicated += s.seen.length - unique.size;
        result.lost += o.chunks - unique.size;
        result.merged += s.merged;
        result.coalescedReads += s.coalesced;
        for (let i = 1; i < s.seen.length; i++) if (s.seen[i] < s.seen[i - 1]) result.outOfOrder++;
        if (!s.done) result.missingDone++;
        if (unique.size === o.chunks && s.done && s.merged === 0) result.streamsOk++;
      } catch (err) {
        result.lost += o.chunks;
        if (errors.length < 5) errors.push(err instanceof Error ? err.message : String(err));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, streams) }, worker));
  result.ttfcMs = summarize(ttfc);
  result.chunkDelayMs = summarize(delays);
  return result;
}

async function hold(o: ProbeOptions, streams: number, batch: number, readyTimeout: number): Promise<void> {
  const controller = new AbortController();
  const errors: string[] = [];
  let ready = 0;
  let failed = 0;
  const started = performance.now();
  const readers: Promise<void>[] = [];
  const openOne = (): Promise<void> => {
    const first = Promise.withResolvers<void>();
    const reader = (async () => {
      try {
        const response = await fetch(o.url, requestInit(o, controller.signal));
        if (response.status !== 200 || response.body === null) {
          throw new Error(`status ${response.status}: ${(await response.text()).slice(0, 200)}`);
        }
        let firstSeen = false;
        for await (const _ of response.body) {
          if (!firstSeen) {
            firstSeen = true;
            ready++;
            first.resolve();
          }
        }
      } catch (err) {
        if (!controller.signal.aborted) {
          failed++;
          if (errors.length < 5) errors.push(err instanceof Error ? err.message : String(err));
        }
      } finally {
        first.resolve();
      }
    })();
    readers.push(reader);
    return first.promise;
  };
  for (let opened = 0; opened < streams; opened += batch) {
    const n = Math.min(batch, streams - opened);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stalled = new Promise<boolean>((r) => timer = setTimeout(() => r(true), readyTimeout));
    const settled = Promise.all(Array.from({ length: n }, openOne)).then(() => false);
    const timedOut = await Promise.race([settled, stalled]);
    clearTimeout(timer);
    if (timedOut) {
      errors.push(
        `${opened + n - ready} streams without a first chunk after ${readyTimeout} ms; stopped opening`,
      );
      break;
    }
  }
  const report = (phase: HoldResult["phase"]): HoldResult => ({
    mode: "hold",
    phase,
    ready,
    failed,
    errors,
    openMs: Math.round(performance.now() - started),
  });
  console.log(JSON.stringify(report("ready")));
  // Hold until the orchestrator closes stdin.
  for await (const _ of Deno.stdin.readable) { /* drain */ }
  controller.abort();
  // Aborting ends every read at once; do not hang on one that does not.
  await Promise.race([Promise.allSettled(readers), new Promise((r) => setTimeout(r, 2_000))]);
  console.log(JSON.stringify(report("end")));
  Deno.exit(0);
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      url: { type: "string" },
      token: { type: "string", default: "" },
      model: { type: "string", default: "bench-chat" },
      streams: { type: "string", default: "100" },
      concurrency: { type: "string", default: "10" },
      chunks: { type: "string", default: "20" },
      interval: { type: "string", default: "10" },
      batch: { type: "string", default: "250" },
      warmup: { type: "string", default: "20" },
      "ready-timeout": { type: "string", default: "30000" },
    },
  });
  const mode = positionals[0] ?? "timing";
  if (!values.url) {
    console.error("usage: stream_probe.ts timing|hold --url URL [--token T] [--model M] [--streams N] …");
    Deno.exit(2);
  }
  const o: ProbeOptions = {
    url: values.url,
    token: values.token,
    model: values.model,
    chunks: Number(values.chunks),
    interval: Number(values.interval),
  };
  if (mode === "hold") {
    await hold(o, Number(values.streams), Number(values.batch), Number(values["ready-timeout"]));
  } else {
    const result = await timing(o, Number(values.streams), Number(values.concurrency), Number(values.warmup));
    console.log(JSON.stringify(result));
  }
}
