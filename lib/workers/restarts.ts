/**
 * Keeps `serve --workers N` at N workers. A worker that dies (or is ended as hung) is replaced; a replacement that
 * does not start (its start throws, crashes or never ends) is tried again, for as long as the gateway runs. A
 * worker that keeps dying soon after its start, or a replacement that keeps failing, is tried again after a wait
 * that doubles up to a bound (`PoolTiming.restartDelayMs`), so one that cannot start never spins the CPU. Each
 * failure is logged (`worker_restart_failed`, with the wait before the next try) and counted
 * (`gateway_worker_start_failures_total`), and `gateway_workers_serving` says how many workers serve: fewer than N
 * while one is being replaced.
 *
 * @module
 */
import type { Logger } from "../log.ts";
import type { Counter, Gauge, Registry } from "../metrics/registry.ts";
import { reasonOf } from "../start_error.ts";
import type { PoolTiming } from "./pool_timing.ts";

/** A worker that dies within this long of its start counts as dying young: the next start waits. */
const YOUNG_MS = 5_000;

/** Options of {@linkcode Restarts}. */
export interface RestartsOptions {
  readonly timing: PoolTiming;
  readonly logger: Logger;
  /** The primary's metrics, where the two series are kept. */
  readonly registry: Registry;
  /** Starts worker `index` (in turn with reloads); rejects when it did not start. */
  readonly start: (index: number) => Promise<void>;
}

/** The replacements of one pool. */
export class Restarts {
  readonly #options: RestartsOptions;
  /** Deaths soon after a start and failed starts in a row, across the pool. */
  #trouble = 0;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #stopped = false;
  readonly #serving: Gauge<readonly []>;
  readonly #failures: Counter<readonly []>;

  constructor(options: RestartsOptions) {
    this.#options = options;
    this.#serving = options.registry.gauge(
      "gateway_workers_serving",
      "Workers of serve --workers N serving now (fewer than N while one is being replaced).",
      [],
    );
    this.#failures = options.registry.counter(
      "gateway_worker_start_failures_total",
      "Starts of a replacement worker that failed (each is tried again after a back-off).",
      [],
    );
  }

  /** `count` workers serve now. */
  serving(count: number): void {
    this.#serving.set([], count);
  }

  /** Worker `index`, started at `startedAt` (ms since the epoch), died: it is replaced, at once or after a wait. */
  died(index: number, startedAt: number): void {
    if (this.#stopped) return;
    this.#trouble = Date.now() - startedAt < YOUNG_MS ? this.#trouble + 1 : 0;
    this.#later(index, this.#options.timing.restartDelayMs(this.#trouble));
  }

  /** No more replacements: the gateway stops. */
  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /** Starts worker `index` after `delayMs`. */
  #later(index: number, delayMs: number): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.#attempt(index);
    }, delayMs);
    this.#timers.add(timer);
  }

  async #attempt(index: number): Promise<void> {
    if (this.#stopped) return;
    const { logger, timing } = this.#options;
    try {
      await this.#options.start(index);
      if (!this.#stopped) logger.info("worker_restarted", { worker: index });
    } catch (err) {
      if (this.#stopped) return;
      this.#trouble++;
      this.#failures.inc([]);
      const delayMs = timing.restartDelayMs(this.#trouble);
      logger.error("worker_restart_failed", { worker: index, error: reasonOf(err), retry_in_ms: delayMs });
      this.#later(index, delayMs);
    }
  }
}
