/**
 * What one bench run measured (also written as RESULTS.json), and the machine it ran on.
 *
 * @module
 */
import type { TimingResult } from "../stream_probe.ts";
import type { LatencyResult } from "../phases/latency.ts";
import type { HoldMeasure } from "../phases/memory.ts";
import type { WrkResult } from "../phases/throughput.ts";
import { run } from "./process.ts";
import { state } from "./settings.ts";

/** Everything measured, also written as RESULTS.json. */
export interface Results {
  date: string;
  mode: "quick" | "full";
  machine: Record<string, string>;
  layout: string;
  backgroundBusyStart: number;
  backgroundBusyEnd: number;
  targets: {
    key: string;
    label: string;
    runtime: string;
    kind: string;
    unavailable?: string;
    /** The phases it takes part in, when not all. */
    phases?: readonly string[];
  }[];
  throughput: Record<string, { runs: WrkResult[]; cpuUsPerRequest: number; error?: string }>;
  latency: Record<string, LatencyResult | { error: string }>;
  streams: Record<string, TimingResult | { error: string }>;
  memory: Record<string, (HoldMeasure | { streams: number; error: string })[]>;
  coldStart: Record<string, { runsMs: number[]; error?: string }>;
  notes: string[];
  durationS: number;
}

export async function machineInfo(): Promise<Record<string, string>> {
  const cpuinfo = await Deno.readTextFile("/proc/cpuinfo");
  const meminfo = await Deno.readTextFile("/proc/meminfo");
  const memKiB = Number(/MemTotal:\s+(\d+)/.exec(meminfo)?.[1] ?? 0);
  const first = (text: string) => text.trim().split("\n")[0] ?? "";
  return {
    cpus: String(navigator.hardwareConcurrency),
    model: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1] ?? "unknown",
    memory: `${(memKiB / 1024 / 1024).toFixed(1)} GiB`,
    kernel: `${Deno.build.os} ${Deno.osRelease()}`,
    deno: Deno.version.deno,
    bun: state.bun ? first((await run([state.bun, "--version"])).stdout) : "unavailable",
    wrk: first((await run(["wrk", "--version"])).stdout).replace(/ Copyright.*/, ""),
    h2load: first((await run(["h2load", "--version"])).stdout),
    loadavg: Deno.loadavg().map((x) => x.toFixed(2)).join(" "),
  };
}
