/**
 * The one rule every shared store on the request path follows while it fails: the counters in Redis
 * (`policy/resilient_counter_store.ts`), the response cache in Redis (`cache/response_cache.ts`) and stored
 * responses in PostgreSQL (`usage/responses_store_postgres.ts`). Once a call has failed the store is down:
 * calls are answered at once without it (each store says how: a local decision, a bypass, a 503), but for one
 * call per probe interval, which tries the store again; the first call it answers makes it up again. A store
 * that stalls then costs one request per interval its timeout, not every request; a store that is back is
 * used again within an interval of the first call after it returned, with no restart.
 *
 * It only keeps the state: each store tells it how its calls ended (`failed`, `succeeded`) and logs the changes
 * of state it is told of (each returns whether it was one), so one log line per change, never one per call.
 *
 * @module
 */

/** How often, at most, a call tries a store that is down (ms), unless a store is given another interval. */
export const STORE_PROBE_INTERVAL_MS = 500;

/** Options of {@linkcode createStoreBreaker}. */
export interface StoreBreakerOptions {
  /** How often, at most, a call tries the store while it is down (ms). Default {@linkcode STORE_PROBE_INTERVAL_MS}. */
  readonly probeIntervalMs?: number;
  readonly now?: () => number;
}

/** Whether a store is up, and whether a call should try it now. */
export interface StoreBreaker {
  /** True until a call fails, and again once one succeeds. */
  readonly up: boolean;
  /**
   * Whether this call should go to the store: always while up; while down, the first call once the probe
   * interval has passed since the last failure or try (that call is the probe; the others are not).
   */
  tryNow(): boolean;
  /** A call failed (or took longer than the store's timeout): down, next probe an interval from now. True when it was up. */
  failed(): boolean;
  /** A call was answered: up. True when it was down (the store is back). */
  succeeded(): boolean;
}

/** A breaker that starts up. */
export function createStoreBreaker(options: StoreBreakerOptions = {}): StoreBreaker {
  const now = options.now ?? Date.now;
  const interval = options.probeIntervalMs ?? STORE_PROBE_INTERVAL_MS;
  let up = true;
  let nextProbe = 0;
  return {
    get up() {
      return up;
    },
    tryNow() {
      if (up) return true;
      const t = now();
      if (t < nextProbe) return false;
      nextProbe = t + interval;
      return true;
    },
    failed() {
      nextProbe = now() + interval;
      if (!up) return false;
      up = false;
      return true;
    },
    succeeded() {
      if (up) return false;
      up = true;
      return true;
    },
  };
}

/**
 * The cause of an answer a store gave without trying its backend (it is down, and this call was no probe).
 * Whoever logs a store's failures logs only the calls that tried it: the change of state was said once, and
 * one line per request while a store is down would flood the log at the request rate.
 */
export class StoreNotTried extends Error {
  constructor(what: string) {
    super(`${what} not tried: the store failed the last call (tried again once per interval)`);
    this.name = "StoreNotTried";
  }
}

/** Whether `err`, or an error it was caused by, is a {@linkcode StoreNotTried}. */
export function wasNotTried(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    if (e instanceof StoreNotTried) return true;
  }
  return false;
}
