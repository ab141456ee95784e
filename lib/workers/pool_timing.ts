/**
 * How long the primary of `serve --workers N` waits on its workers, what it makes of one that does not answer, and
 * how long it waits before starting a replacement again. The gateway runs with {@linkcode POOL_TIMING}; a test
 * hands shorter bounds, so that a worker it keeps from answering is judged without the test waiting seconds, and
 * never on a guess of how long a healthy answer takes.
 *
 * @module
 */
import type { Channel } from "./channel.ts";

/** The primary's bounds on its workers. */
export interface PoolTiming {
  /**
   * How long a worker has to answer a call of the primary (a reload's step, a scrape, a token change; a shutdown's
   * `stop` has this beyond its grace). Its own event loop answers them at once: one that has not answered by then
   * is stuck, and is ended and replaced ({@linkcode onUnanswered}).
   */
  readonly answerMs: number;
  /** How long a worker has to start (set its state up and listen); one that has not is ended, and tried again. */
  readonly startMs: number;
  /**
   * The wait before a replacement's start after `trouble` deaths soon after a start or failed starts in a row (0
   * when the worker had served a while: at once). Bounded, so a worker that cannot start never spins the CPU.
   */
  readonly restartDelayMs: (trouble: number) => number;
}

/** The longest wait between two starts of a replacement. */
const MAX_RESTART_DELAY_MS = 10_000;

/** The gateway's bounds. */
export const POOL_TIMING: PoolTiming = {
  // Well past any answer of a live worker (they are answered from memory), within Prometheus's default
  // scrape_timeout (10 s), so a scrape that finds a stuck worker is still answered.
  answerMs: 5_000,
  // A start reads the token directory through the primary, which may wait on PostgreSQL's own bounds (5 s).
  startMs: 60_000,
  restartDelayMs: (trouble) => trouble === 0 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 250 * 2 ** trouble),
};

/**
 * The calls a worker answers only after asking the primary something in turn (a token change reloads the token
 * directory from the primary's store, which has bounds of its own): one unanswered in time may be waiting on the
 * primary's store, not stuck, so its thread is asked whether it runs before it is taken as hung.
 */
const WAITS_ON_PRIMARY: ReadonlySet<string> = new Set(["tokens.changed"]);

/**
 * A call of `method` to the worker at `channel` went unanswered within its bound: `hung` (which ends the worker and
 * starts a replacement) unless the call waits on the primary; then only if the worker does not answer a `ping`
 * either (the channel's bound again, and this again for the ping).
 */
export function onUnanswered(method: string, channel: () => Channel, hung: () => void): void {
  if (!WAITS_ON_PRIMARY.has(method)) return hung();
  channel().call("ping").catch(() => {});
}
