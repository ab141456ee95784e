/**
 * Background threads yield to the thread that serves requests. On Linux a thread is its own scheduling entity,
 * and `setpriority` on "process" 0 changes only the calling thread, on Deno and Bun alike; elsewhere, or without
 * the permission (Deno's `--allow-sys=setPriority`), it is left as it is: a worse tail, never an error.
 *
 * Why: the usage database's worker commits a batch in one burst of CPU (about 5 ms for 500 records). When the
 * request thread has no core of its own (one core, or all of them busy) the scheduler lets the worker, which
 * slept since its last batch, run first; requests arriving then waited for it (at 1,000 requests/s, a cluster
 * of slow requests every 500 ms, one per batch). Measured on the Bun binary pinned to one core at 1,000
 * requests/s, five interleaved runs each: the slowest request 11–26 ms (median 15.2) at the same priority
 * against 9.4–10.2 ms at nice 5, p99 3.7–5.4 ms (median 4.2) against 3.1–4.1 ms (median 3.9); in the bench
 * harness's latency phase (two runs each) the difference was within its noise (bench/README.md). Nice 5 leaves
 * the worker about a quarter of a busy core, over twice what its inserts take: at nice 10 (a tenth) it fell
 * behind under saturation and 11,000 records went to the spill file; at nice 5 none did.
 *
 * @module
 */
import { setPriority } from "node:os";

/** The nice value background threads take (0 is the default; 19 the lowest priority). */
export const BACKGROUND_NICE = 5;

/**
 * Whether this process may set priorities. Asked first on Deno, where calling without the permission would
 * prompt an operator who runs the gateway in a terminal with flags of their own.
 */
function permitted(): boolean {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  return deno === undefined ||
    deno.permissions.querySync({ name: "sys", kind: "setPriority" }).state === "granted";
}

/** Lowers the calling thread's scheduling priority to {@linkcode BACKGROUND_NICE}; true when it did. */
export function lowerThreadPriority(
  set: (pid: number, priority: number) => void = setPriority,
  allowed: () => boolean = permitted,
): boolean {
  try {
    if (!allowed()) return false;
    set(0, BACKGROUND_NICE);
    return true;
  } catch {
    return false; // not permitted, or not supported here: the thread keeps its priority
  }
}
