/**
 * Process plumbing for the bench: running commands, CPU pinning, free ports, and reading a process's CPU time
 * and memory (and the machine's load) from /proc. Also the run's temp directory.
 *
 * @module
 */
import { PIN } from "./settings.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const decoder = new TextDecoder();
export const round = (x: number, digits = 2) =>
  Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : NaN;
export const shq = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
export const log = (msg: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

import { run } from "./command.ts";

export { type CommandResult, run } from "./command.ts";

export const pinned = (cpu: string, argv: string[]) => PIN ? ["taskset", "-c", cpu, ...argv] : argv;

export async function which(cmd: string): Promise<boolean> {
  return (await run(["sh", "-c", `command -v ${cmd}`])).code === 0;
}

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** utime + stime of a process, in microseconds. */
export async function cpuMicros(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * (1_000_000 / CLK_TCK);
}

/** Resident set size of a process, in KiB. */
export async function rssKiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
}

/** Share of the whole machine that was busy over `ms` (all cores), from /proc/stat. */
export async function machineBusy(ms: number): Promise<number> {
  const read = async () => {
    const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1).map(
      Number,
    );
    const idle = line[3] + line[4];
    return { idle, total: line.reduce((a, b) => a + b, 0) };
  };
  const a = await read();
  await sleep(ms);
  const b = await read();
  return 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
}

export const CLK_TCK = Number((await run(["getconf", "CLK_TCK"])).stdout.trim()) || 100;
export const TMP = await Deno.makeTempDir({ prefix: "gateway-bench-" });
