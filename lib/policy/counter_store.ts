/**
 * The counters behind rate limits, concurrency limits and budgets, behind a small asynchronous interface so
 * that the embedded store of a single node can later be swapped for a shared one (Redis) without touching
 * the engine.
 *
 * Every operation is designed to be one atomic call on a shared store:
 *
 * - {@linkcode CounterStore.reserve} checks a whole list of limits and takes from all of them, or from none
 *   (one Lua script over all the keys). All-or-nothing is what makes limits exact: a request that one limit
 *   denies has taken nothing from the others, so it never makes another request fail.
 * - {@linkcode CounterStore.adjust} corrects a bucket by a signed amount (`HINCRBYFLOAT` after a refill, in
 *   a script).
 * - {@linkcode CounterStore.release} frees a concurrency slot (`DECR`, deleting at zero).
 * - {@linkcode CounterStore.periodGet} / {@linkcode CounterStore.periodAdd} / {@linkcode CounterStore.periodRaise}
 *   read and grow a per-period counter (`GET`; a sum or a max, `SET` + `PEXPIRE`, in a script).
 * - {@linkcode CounterStore.peek} reads what every check would meet, taking nothing (a read-only script).
 *
 * Rate limits are token buckets: capacity = the limit, refilled continuously at `limit` per `windowMs`. So
 * "N per minute" lets a burst of exactly N through, then one more every 60/N seconds, and a bucket left
 * alone for a window is full again. A bucket may go below zero through {@linkcode CounterStore.adjust} (a
 * request that used more tokens than it was charged up front); it then takes correspondingly longer to
 * refill. An absent bucket is a full one, which is what lets idle keys expire.
 *
 * @module
 */
import {
  bucketAllows,
  bucketLevel,
  type BucketState,
  EPSILON,
  msUntilAvailable,
  msUntilFull,
  periodAllows,
} from "./bucket_math.ts";

export { bucketAllows, bucketLevel, type BucketState, msUntilAvailable, msUntilFull, periodAllows };

/** Take `amount` from a token bucket of capacity `limit` that refills `limit` per `windowMs`. */
export interface BucketCheck {
  readonly kind: "bucket";
  readonly key: string;
  readonly limit: number;
  readonly windowMs: number;
  /** What is taken when every check passes; 0 only reads the bucket (and always passes). */
  readonly amount: number;
}

/** Take one of `limit` slots for a request in flight; given back with {@linkcode CounterStore.release}. */
export interface ConcurrencyCheck {
  readonly kind: "concurrency";
  readonly key: string;
  readonly limit: number;
}

/**
 * A budget's period counter. With an `amount` (the request's estimated cost), passes when the counter plus
 * the amount stays within `limit` and then reserves the amount (settling adds actual − amount); with no
 * amount (0), only passes while the counter is below `limit` and takes nothing.
 */
export interface PeriodCheck {
  readonly kind: "period";
  readonly key: string;
  /** The period's id, e.g. "2026-11-22" or "2026-11". */
  readonly period: string;
  readonly limit: number;
  /** What is reserved when every check passes; 0 or absent only reads the counter. */
  readonly amount?: number;
  /** When a counter created by the reservation is forgotten (epoch ms). */
  readonly expiresAt?: number;
}

/** One limit a request must pass. */
export type Check = BucketCheck | ConcurrencyCheck | PeriodCheck;

/** How one check went, and the state of its counter afterwards. */
export interface CheckResult {
  /** Whether this check alone would have passed. */
  readonly ok: boolean;
  /**
   * What is used of the limit: bucket `limit - level` (may exceed the limit after an overdraft), requests in
   * flight, or the period's total; after this request's take when the reservation succeeded.
   */
  readonly used: number;
  /** What is left of the limit, never below 0 (bucket levels are floored to whole units). */
  readonly remaining: number;
  /** Milliseconds until the counter is back to its initial state (a full bucket); 0 for the other kinds. */
  readonly resetMs: number;
  /** For a failed bucket check, milliseconds until `amount` is available; otherwise 0. */
  readonly retryAfterMs: number;
}

/** The answer to {@linkcode CounterStore.reserve}: one result per check, in order. */
export interface ReserveResult {
  /** True when every check passed and all were taken; false when none was. */
  readonly ok: boolean;
  readonly results: readonly CheckResult[];
  /**
   * The store that took the reservation, when it is not the one asked (a shared store that fell back to a
   * local one while it was unreachable): releasing, adjusting and charging the admission go there.
   */
  readonly store?: CounterStore;
  /**
   * The checks as judged and taken, one per check asked, when they differ from those asked (the local
   * limiter of `fail_open` judges each limit at the replica's share and caps each amount at it). Settling
   * corrects by what was really taken, these amounts, not the estimates asked: else an amount cut down at
   * admission would be refunded in full, or an actual usage above the cut never charged.
   */
  readonly checks?: readonly Check[];
  /**
   * A shared store's name for this admission, given back in {@linkcode SettleOps.reservation}: it frees this
   * admission's own slots and sends a settlement again without counting it twice. `fail_open`'s local limiter
   * ({@linkcode store}) keeps books of what each named reservation got onto the shared counters (all its refund
   * may take back), so it is settled by that name even with nothing to correct, to forget them.
   */
  readonly reservation?: string;
}

/** A bucket as {@linkcode CounterStore.adjust} names it. */
export type BucketRef = Pick<BucketCheck, "key" | "limit" | "windowMs">;

/** The counters the policy engine needs. Every method is atomic on its own. */
export interface CounterStore {
  /** Checks every limit and, if all pass, takes from all of them at once; otherwise takes nothing. */
  reserve(checks: readonly Check[]): Promise<ReserveResult>;
  /**
   * Takes `delta` more from a bucket (a negative delta gives back). The level never rises above the limit
   * but may fall below zero.
   */
  adjust(bucket: BucketRef, delta: number): Promise<void>;
  /** Gives back one concurrency slot taken by a successful {@linkcode reserve}. */
  release(key: string): Promise<void>;
  /** The value of a period counter (0 when absent). */
  periodGet(key: string, period: string): Promise<number>;
  /** Adds to a period counter (never below zero), forgotten after `expiresAt` (epoch ms); returns the new
   * value. With `heldIn` ({@linkcode PeriodDelta.heldIn}), only while that counter exists. */
  periodAdd(key: string, period: string, amount: number, expiresAt: number, heldIn?: string): Promise<number>;
  /** Raises a period counter to at least `value` (never lowers it); returns the new value. */
  periodRaise(key: string, period: string, value: number, expiresAt: number): Promise<number>;
  /**
   * Optional: everything an admission gives back or corrects when it ends, in one call (one script, one
   * round trip on a shared store). Without it, the engine calls {@linkcode release}, {@linkcode adjust} and
   * {@linkcode periodAdd} one by one.
   */
  settle?(ops: SettleOps): Promise<void>;
  /**
   * Optional: how every check would go now, taking nothing (not even a concurrency slot), for
   * `/admin/explain`. Each result is {@linkcode reserve}'s for that check had it been asked: `ok` says
   * whether the check alone would pass with its amount, `used` and `remaining` are the counter as it is.
   */
  peek?(checks: readonly Check[]): Promise<PeekResult>;
  /**
   * Optional: drops the counters of `checks` this process keeps (buckets and period counters; concurrency
   * slots are kept, a request in flight still gives its slot back) as if never used: an end user forgotten
   * under `max_users` takes no memory. A shared store's keys are not dropped: they expire by their own TTL.
   */
  forget?(checks: readonly Check[]): Promise<void>;
  /**
   * Optional, on a proxy of counters another thread owns (a worker's of the primary's): tells the owner the
   * end users just seen; it keeps the one list of recent users and forgets those pushed out of `max_users`.
   */
  seen?(users: readonly SeenUser[]): Promise<void>;
}

/** An end user a request was judged for (denied or not), for {@linkcode CounterStore.seen}. */
export interface SeenUser {
  /** The block whose `max_users` list the user is in: `alias:<name>` or `token:<id>`. */
  readonly owner: string;
  /** The user within that list: its counters' key base (an alias's users are told apart by their token too). */
  readonly userKey: string;
  /** The owner's `max_users`. */
  readonly maxUsers: number;
  /** The user's counters: forgotten with the user. */
  readonly checks: readonly Check[];
}

/** The answer to {@linkcode CounterStore.peek}. */
export interface PeekResult {
  /** One per check, in order. */
  readonly results: readonly CheckResult[];
  /**
   * `store` when the store asked answered; `local` when a shared store is unreachable and the local limiter
   * that decides meanwhile (`fail_open`) answered instead, judging `checks`.
   */
  readonly source: "store" | "local";
  /** The checks as judged, when they differ from those asked (the local limiter's share of each limit). */
  readonly checks?: readonly Check[];
}

/** What {@linkcode CounterStore.settle} does: the same as the single calls, together. */
export interface SettleOps {
  /** Concurrency slots to give back. */
  readonly release: readonly string[];
  /** Buckets to correct by `delta` (as {@linkcode CounterStore.adjust}). */
  readonly adjust: readonly { readonly bucket: BucketRef; readonly delta: number }[];
  /** Period counters to add `amount` to (as {@linkcode CounterStore.periodAdd}). */
  readonly periods: readonly PeriodDelta[];
  /** The admission's {@linkcode ReserveResult.reservation}, when its store named it. */
  readonly reservation?: string;
}

/** An addition to a period counter. */
export interface PeriodDelta {
  readonly key: string;
  readonly period: string;
  readonly amount: number;
  readonly expiresAt: number;
  /**
   * The counter (same period) holding the reservation this settles: added only while that exists, so the
   * requests of an end user forgotten under `max_users` ({@linkcode CounterStore.forget}) bring none of its
   * counters back as they settle. A store that never forgets a counter (a shared one) may ignore it.
   */
  readonly heldIn?: string;
}

/** Options of {@linkcode createMemoryCounterStore}. */
export interface MemoryCounterStoreOptions {
  /** How often (at most) expired keys are swept, in ms of the store's clock. Default 60 s. */
  sweepIntervalMs?: number;
}

/** The result of a counted check (a concurrency or period counter at `used`): no reset, no wait. */
function counted(ok: boolean, used: number, limit: number): CheckResult {
  return { ok, used, remaining: Math.max(0, limit - used), resetMs: 0, retryAfterMs: 0 };
}

interface Expiring<T> {
  value: T;
  expiresAt: number;
}

/**
 * The embedded store of a single node: plain maps, atomic because JavaScript runs each call to completion.
 * Memory stays bounded: buckets are dropped once full again (indistinguishable from absent), concurrency
 * counters at zero, and period counters after their expiry; expired keys are swept on use, at most once per
 * `sweepIntervalMs`.
 */
export function createMemoryCounterStore(
  now: () => number = Date.now,
  options: MemoryCounterStoreOptions = {},
): CounterStore & Required<Pick<CounterStore, "peek" | "forget">> & { readonly size: () => number } {
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
  const buckets = new Map<string, Expiring<BucketState>>();
  const inFlight = new Map<string, number>();
  const periods = new Map<string, Expiring<number>>();
  let lastSweep = now();

  function sweep(t: number): void {
    if (t - lastSweep < sweepIntervalMs) return;
    lastSweep = t;
    for (const [key, entry] of buckets) if (entry.expiresAt <= t) buckets.delete(key);
    for (const [key, entry] of periods) if (entry.expiresAt <= t) periods.delete(key);
  }

  function bucketState(key: string, t: number): BucketState | undefined {
    const entry = buckets.get(key);
    if (entry && entry.expiresAt <= t) {
      buckets.delete(key);
      return undefined;
    }
    return entry?.value;
  }

  function setBucket(key: string, level: number, limit: number, windowMs: number, t: number): void {
    const full = msUntilFull(level, limit, windowMs);
    if (full === 0) buckets.delete(key);
    else buckets.set(key, { value: { level, at: t }, expiresAt: t + full });
  }

  function periodKey(key: string, period: string): string {
    return `${key}\u0000${period}`;
  }

  function periodValue(key: string, t: number): number {
    const entry = periods.get(key);
    if (!entry) return 0;
    if (entry.expiresAt <= t) {
      periods.delete(key);
      return 0;
    }
    return entry.value;
  }

  function evaluate(check: Check, t: number): CheckResult {
    switch (check.kind) {
      case "bucket": {
        const level = bucketLevel(bucketState(check.key, t), check.limit, check.windowMs, t);
        const ok = bucketAllows(level, check.amount);
        return {
          ok,
          used: check.limit - level,
          remaining: Math.max(0, Math.floor(level + EPSILON)),
          resetMs: msUntilFull(level, check.limit, check.windowMs),
          retryAfterMs: ok ? 0 : msUntilAvailable(level, check.amount, check.limit, check.windowMs),
        };
      }
      case "concurrency": {
        const used = inFlight.get(check.key) ?? 0;
        return counted(used < check.limit, used, check.limit);
      }
      case "period": {
        const used = periodValue(periodKey(check.key, check.period), t);
        return counted(periodAllows(used, check.amount ?? 0, check.limit), used, check.limit);
      }
    }
  }

  function take(check: Check, t: number): CheckResult {
    switch (check.kind) {
      case "bucket": {
        if (check.amount <= 0) return evaluate(check, t);
        const level = bucketLevel(bucketState(check.key, t), check.limit, check.windowMs, t) - check.amount;
        setBucket(check.key, level, check.limit, check.windowMs, t);
        return {
          ok: true,
          used: check.limit - level,
          remaining: Math.max(0, Math.floor(level + EPSILON)),
          resetMs: msUntilFull(level, check.limit, check.windowMs),
          retryAfterMs: 0,
        };
      }
      case "concurrency": {
        const used = (inFlight.get(check.key) ?? 0) + 1;
        inFlight.set(check.key, used);
        return counted(true, used, check.limit);
      }
      case "period": {
        const amount = check.amount ?? 0;
        if (!(amount > 0)) return evaluate(check, t);
        const k = periodKey(check.key, check.period);
        const used = periodValue(k, t) + amount;
        periods.set(k, { value: used, expiresAt: check.expiresAt ?? periods.get(k)?.expiresAt ?? Infinity });
        return counted(true, used, check.limit);
      }
    }
  }

  return {
    reserve(checks) {
      const t = now();
      sweep(t);
      const evaluated = checks.map((check) => evaluate(check, t));
      if (!evaluated.every((r) => r.ok)) return Promise.resolve({ ok: false, results: evaluated });
      return Promise.resolve({ ok: true, results: checks.map((check) => take(check, t)) });
    },
    adjust(bucket, delta) {
      const t = now();
      sweep(t);
      if (delta !== 0 && Number.isFinite(delta)) {
        const level = bucketLevel(bucketState(bucket.key, t), bucket.limit, bucket.windowMs, t) - delta;
        setBucket(bucket.key, Math.min(bucket.limit, level), bucket.limit, bucket.windowMs, t);
      }
      return Promise.resolve();
    },
    release(key) {
      const used = (inFlight.get(key) ?? 0) - 1;
      if (used > 0) inFlight.set(key, used);
      else inFlight.delete(key);
      return Promise.resolve();
    },
    periodGet(key, period) {
      const t = now();
      sweep(t);
      return Promise.resolve(periodValue(periodKey(key, period), t));
    },
    periodAdd(key, period, amount, expiresAt, heldIn) {
      const t = now();
      sweep(t);
      const k = periodKey(key, period);
      // Its reservation went with its end user (forgotten): adding would only bring a counter back.
      if (heldIn && !periods.has(periodKey(heldIn, period))) return Promise.resolve(periodValue(k, t));
      // Never below zero (a refund settled into a counter made afresh since its user was forgotten would
      // leave credit beyond the budget); a zero is no entry (it reads as 0 all the same).
      const value = Math.max(0, periodValue(k, t) + (Number.isFinite(amount) ? amount : 0));
      if (value === 0) periods.delete(k);
      else periods.set(k, { value, expiresAt });
      return Promise.resolve(value);
    },
    periodRaise(key, period, value, expiresAt) {
      const t = now();
      sweep(t);
      const k = periodKey(key, period);
      const next = Math.max(periodValue(k, t), Number.isFinite(value) ? value : 0);
      periods.set(k, { value: next, expiresAt });
      return Promise.resolve(next);
    },
    peek(checks) {
      const t = now();
      sweep(t);
      return Promise.resolve({ results: checks.map((check) => evaluate(check, t)), source: "store" });
    },
    forget(checks) {
      for (const check of checks) {
        if (check.kind === "bucket") buckets.delete(check.key);
        else if (check.kind === "period") periods.delete(periodKey(check.key, check.period));
      }
      return Promise.resolve();
    },
    size: () => buckets.size + inFlight.size + periods.size,
  };
}
