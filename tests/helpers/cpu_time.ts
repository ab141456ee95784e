/**
 * CPU time for the bounds that catch an algorithm gone quadratic: the CPU this thread spends does not grow when
 * other test files load the machine, as the wall clock does (CI runs test files in parallel on two cores).
 *
 * @module
 */
import process from "node:process";

/** What `fn` returns and the CPU milliseconds this thread spent running it. */
export function cpuTimed<T>(fn: () => T): [T, number] {
  const before = process.threadCpuUsage();
  const value = fn();
  const spent = process.threadCpuUsage(before);
  return [value, (spent.user + spent.system) / 1_000];
}
