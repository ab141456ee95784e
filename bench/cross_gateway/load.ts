/**
 * The cross-gateway benchmark's measurement: one wrk run (a "cell": one shape at one concurrency) with every
 * answer checked in wrk's Lua `response` hook, the CPU accounting around it (the target's process tree, wrk's
 * own CPU, and what everything else on the machine used meanwhile), and a target's whole set of cells.
 *
 * @module
 */
import { machineMicros, run, type Server, treeCpuMicros } from "./plumbing.ts";
import { CPUS, DIRECT_SECONDS, log, type Plan, shq, tmpDir } from "./settings.ts";
import { body, type Client, mockClient } from "./targets.ts";

/** One wrk run: requests/s, percentiles, failures (socket errors, non-2xx, wrong bodies) and wrk's CPU. */
export interface Cell {
  concurrency: number;
  stream: boolean;
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  errors: number;
  non2xx: number;
  badBodies: number;
  /** CPU of the target's process tree per request, µs. */
  cpuUsPerRequest: number;
  /** wrk's own CPU over the run, as a share of one core. */
  wrkCpuShare: number;
  /**
   * CPU used by everything else on the machine during the run (all busy time from /proc/stat minus the target's
   * tree, the mock's and wrk's), in cores: what shared the CPUs.
   */
  othersCores: number;
}

/** One row of the report: a target's cells, or why it was not run. */
export interface TargetResult {
  key: string;
  label: string;
  notRun?: string;
  cells: Cell[];
  /** The mock measured directly right before each of `cells` (same order): the baseline of added latency. */
  direct?: Cell[];
}

function wrkScript(client: Client, stream: boolean): string {
  const headers = Object.entries(client.headers).map(([k, v]) =>
    `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`
  )
    .join("\n");
  const expect = stream ? "data: [DONE]" : '"chat.completion"';
  return `wrk.method = "POST"
wrk.body = ${JSON.stringify(body(client, stream))}
${headers}
local threads = {}
function setup(thread) table.insert(threads, thread) end
bad = 0
function response(status, headers, body)
  if status == 200 and not string.find(body, ${JSON.stringify(expect)}, 1, true) then bad = bad + 1 end
end
done = function(summary, latency, requests)
  local e = summary.errors
  local b = 0
  for _, t in ipairs(threads) do b = b + (t:get("bad") or 0) end
  io.write(string.format('XGW_JSON {"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"bad":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status, b,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`;
}

async function wrk(
  server: Server,
  client: Client,
  concurrency: number,
  stream: boolean,
  seconds: number,
): Promise<Omit<Cell, "cpuUsPerRequest" | "othersCores">> {
  const script = `${tmpDir()}/${stream ? "stream" : "json"}-${server.name}.lua`;
  await Deno.writeTextFile(script, wrkScript(client, stream));
  // `times` after wrk prints the shell's children's user and system CPU: wrk's own.
  const command = `wrk -t1 -c${concurrency} -d${seconds}s --timeout 10s -s ${shq(script)} ${
    shq(`${server.base}/v1/chat/completions`)
  }; times`;
  const out = await run(["bash", "-c", command], { timeoutMs: (seconds + 30) * 1000 });
  const line = out.stdout.split("\n").find((l) => l.startsWith("XGW_JSON "));
  if (!line) throw new Error(`wrk failed: ${(out.stderr || out.stdout).slice(0, 300)}`);
  const j = JSON.parse(line.slice("XGW_JSON ".length)) as Record<string, number>;
  const timesLine = out.stdout.trim().split("\n").pop() ?? "";
  const secs = [...timesLine.matchAll(/(\d+)m([\d.]+)s/g)].map((m) => Number(m[1]) * 60 + Number(m[2]));
  const wrkCpu = secs.length === 2 ? secs[0] + secs[1] : NaN;
  const duration = j.duration_us / 1e6;
  return {
    concurrency,
    stream,
    requests: j.requests,
    seconds: duration,
    rps: j.requests / duration,
    p50Ms: j.p50_us / 1000,
    p90Ms: j.p90_us / 1000,
    p99Ms: j.p99_us / 1000,
    maxMs: j.max_us / 1000,
    errors: j.errors,
    non2xx: j.non2xx,
    badBodies: j.bad,
    wrkCpuShare: wrkCpu / duration,
  };
}

/**
 * One measured wrk run against `server` with its CPU accounting (after `warm` s of warm-up). `mock` is the
 * upstream: its CPU is the target's doing, so it is not counted as another process's.
 */
async function cellOf(
  server: Server,
  client: Client,
  concurrency: number,
  stream: boolean,
  seconds: number,
  warm: number,
  mock: Server,
): Promise<Cell> {
  if (warm > 0) await wrk(server, client, concurrency, stream, warm);
  const m0 = await machineMicros();
  const mock0 = server === mock ? 0 : await treeCpuMicros(mock.pid);
  const cpu0 = await treeCpuMicros(server.pid);
  const cell = await wrk(server, client, concurrency, stream, seconds);
  const cpu1 = await treeCpuMicros(server.pid);
  const mock1 = server === mock ? 0 : await treeCpuMicros(mock.pid);
  const m1 = await machineMicros();
  const ours = (cpu1 - cpu0) + (mock1 - mock0) + cell.wrkCpuShare * cell.seconds * 1e6;
  const wall = ((m1.total - m0.total) / CPUS) / 1e6;
  return {
    ...cell,
    cpuUsPerRequest: (cpu1 - cpu0) / Math.max(1, cell.requests),
    othersCores: Math.max(0, (m1.busy - m0.busy - ours) / 1e6 / wall),
  };
}

/**
 * Every (shape, concurrency) cell of `server`; with `paired`, the mock is measured directly right before each
 * cell (no warm-up, `DIRECT_SECONDS`), so the baseline of its added latency saw the same neighbours' load.
 */
export async function measure(
  server: Server,
  client: Client,
  paired: boolean,
  mock: Server,
  plan: Plan,
): Promise<{ cells: Cell[]; direct: Cell[] }> {
  const cells: Cell[] = [];
  const direct: Cell[] = [];
  for (const stream of [false, true]) {
    for (const concurrency of plan.concurrency) {
      log(`${server.name}: ${stream ? "streamed" : "non-streamed"}, ${concurrency} concurrent`);
      if (paired) direct.push(await cellOf(mock, mockClient, concurrency, stream, DIRECT_SECONDS, 0, mock));
      cells.push(await cellOf(server, client, concurrency, stream, plan.seconds, plan.warm, mock));
    }
  }
  return { cells, direct };
}
