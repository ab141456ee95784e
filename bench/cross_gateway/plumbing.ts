/**
 * Process plumbing for the cross-gateway benchmark: running a command to completion, free ports, CPU
 * accounting from /proc (a process tree's CPU, the whole machine's busy time) and spawning a server whose
 * output goes to a log file in the run's temp dir.
 *
 * @module
 */
import { ROOT, shq, sleep, tmpDir } from "./settings.ts";

import { type CommandResult, run, stopChild } from "../harness/command.ts";

export { type CommandResult, run };

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

let clkTck: Promise<number> | undefined;

/**
 * Clock ticks per second (`getconf CLK_TCK`, 100 when it fails): the unit of /proc's CPU times. Asked once,
 * on the first call, so importing this module runs nothing.
 */
export function clockTicks(): Promise<number> {
  clkTck ??= run(["getconf", "CLK_TCK"]).then((out) => Number(out.stdout.trim()) || 100);
  return clkTck;
}

/** Every process in the tree under `pid` (itself included), from /proc. */
export async function processTree(pid: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry.name));
      children.set(ppid, list);
    } catch { /* gone */ }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** utime + stime of `pid` and all its descendants (threads included), in µs. */
export async function treeCpuMicros(pid: number): Promise<number> {
  const ticksPerSecond = await clockTicks();
  let ticks = 0;
  for (const p of await processTree(pid)) {
    try {
      const stat = await Deno.readTextFile(`/proc/${p}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch { /* gone */ }
  }
  return ticks * (1_000_000 / ticksPerSecond);
}

/** Busy and total CPU time of the whole machine so far, in µs, from /proc/stat. */
export async function machineMicros(): Promise<{ busy: number; total: number }> {
  const ticksPerSecond = await clockTicks();
  const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1).map(
    Number,
  );
  const total = line.reduce((a, b) => a + b, 0);
  return {
    busy: (total - line[3] - line[4]) * (1_000_000 / ticksPerSecond),
    total: total * (1_000_000 / ticksPerSecond),
  };
}

/** Share of the whole machine busy over `ms`, from /proc/stat. */
export async function machineBusy(ms: number): Promise<number> {
  const read = async () => {
    const line = (await Deno.readTextFile("/proc/stat")).split("\n")[0].trim().split(/\s+/).slice(1).map(
      Number,
    );
    return { idle: line[3] + line[4], total: line.reduce((a, b) => a + b, 0) };
  };
  const a = await read();
  await sleep(ms);
  const b = await read();
  return 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
}

/** The busiest other processes right now (what shares the CPUs), from `ps`. */
export async function busiestProcesses(): Promise<string[]> {
  const out = await run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"]);
  return out.stdout.trim().split("\n").slice(0, 6).map((l) => l.trim());
}

export interface Server {
  name: string;
  pid: number;
  base: string;
  logFile: string;
  exited: boolean;
  stop(): Promise<void>;
}

/**
 * Starts `argv` through `sh`, which first raises the open-file limit to the hard one (so a low soft limit does not
 * cap the connections under load), with stdout and stderr in `<tmp>/<name>.log` for `logTail`.
 */
export function spawnServer(
  name: string,
  argv: string[],
  port: number,
  options: { env?: Record<string, string>; cwd?: string } = {},
): Server {
  const logFile = `${tmpDir()}/${name}.log`;
  const script = `ulimit -n $(ulimit -Hn) 2>/dev/null; exec ${argv.map(shq).join(" ")} >${shq(logFile)} 2>&1`;
  const child = new Deno.Command("sh", {
    args: ["-c", script],
    cwd: options.cwd ?? ROOT,
    env: options.env,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const server: Server = {
    name,
    pid: child.pid,
    base: `http://127.0.0.1:${port}`,
    logFile,
    exited: false,
    async stop() {
      // Workers (child processes) too: collected before the parent goes, killed by pid if they outlive it.
      const tree = server.exited ? [] : await processTree(child.pid);
      if (!server.exited) await stopChild(child);
      await sleep(200);
      for (const pid of tree.slice(1)) {
        try {
          Deno.kill(pid, "SIGKILL");
        } catch { /* gone */ }
      }
    },
  };
  child.status.then(() => server.exited = true);
  return server;
}

/** The last `lines` of a server's log on one line, colours stripped: what a "not run" reason quotes. */
export async function logTail(server: Server, lines = 6): Promise<string> {
  try {
    const text = await Deno.readTextFile(server.logFile);
    // deno-lint-ignore no-control-regex
    const plain = text.replace(/\x1b\[[0-9;]*m/g, "");
    return plain.trim().split("\n").slice(-lines).join(" | ").slice(0, 500);
  } catch {
    return "(no log)";
  }
}
