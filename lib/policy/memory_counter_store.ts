/**
 * The embedded {@linkcode CounterStore} of a single node (the default without Redis): plain maps in this
 * process, apart from the interface (counter_store.ts) that the shared stores implement too.
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
import type { Check, CheckResult, CounterStore } from "./counter_store.ts";

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
  /** Which counter this is ({@linkcode CheckResult.generation}): numbered when made, kept while it lives. */
  generation: number;
}

/** The memory store: a {@linkcode CounterStore} with `peek` and `forget`, and its own calls. */
export type MemoryCounterStore = CounterStore & Required<Pick<CounterStore, "peek" | "forget">> & MemoryCalls;

/** The memory store's own calls, beside the {@linkcode CounterStore} it is. */
interface MemoryCalls {
  /** How many counters it holds. */
  readonly size: () => number;
  /**
   * Sets a period counter to `value` (at least 0) and `expiresAt`, keeping the counter it is (its
   * generation), so the reservations it holds still settle into it; makes none for 0. `fail_open`'s local
   * limiter keeps what a hand-over left owed so: forgetting and making the counter again would drop the
   * settlements of the requests still running on it (an end user's are added only to the counter they
   * reserved on).
   */
  readonly periodSet: (key: string, period: string, value: number, expiresAt: number) => void;
}

/**
 * The embedded store of a single node: plain maps, atomic because JavaScript runs each call to completion.
 * Memory stays bounded: buckets are dropped once full again (indistinguishable from absent), concurrency
 * counters at zero, and period counters after their expiry; expired keys are swept on use, at most once per
 * `sweepIntervalMs`. Each bucket and period counter is numbered when made ({@linkcode CheckResult.generation}):
 * a refund settled with the number of the counter its reservation took from is given back only to that one.
 */
export function createMemoryCounterStore(
  now: () => number = Date.now,
  options: MemoryCounterStoreOptions = {},
): MemoryCounterStore {
  const sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
  const buckets = new Map<string, Expiring<BucketState>>();
  const inFlight = new Map<string, number>();
  const periods = new Map<string, Expiring<number>>();
  let lastSweep = now();
  /** The last counter's number: each bucket or period counter made takes the next. */
  let generations = 0;

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

  /** Sets a bucket not expired at `t` (bucketState was asked first), keeping its number; full, it goes. */
  function setBucket(key: string, level: number, limit: number, windowMs: number, t: number): void {
    const full = msUntilFull(level, limit, windowMs);
    if (full === 0) buckets.delete(key);
    else {
      const generation = buckets.get(key)?.generation ?? ++generations;
      buckets.set(key, { value: { level, at: t }, expiresAt: t + full, generation });
    }
  }

  /** Sets a period counter not expired at the time (periodValue was asked first), keeping its number. */
  function setPeriod(k: string, value: number, expiresAt: number): void {
    const generation = periods.get(k)?.generation ?? ++generations;
    periods.set(k, { value, expiresAt, generation });
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
          generation: buckets.get(check.key)!.generation,
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
        setPeriod(k, used, check.expiresAt ?? periods.get(k)?.expiresAt ?? Infinity);
        return { ...counted(true, used, check.limit), generation: periods.get(k)!.generation };
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
        const state = bucketState(bucket.key, t);
        // A refund of a bucket gone since (refilled whole, or its user forgotten) would cancel the take of the
        // one made afresh: the bucket it was taken from has given it back by refilling.
        const other = bucket.generation !== undefined &&
          buckets.get(bucket.key)?.generation !== bucket.generation;
        if (delta > 0 || !other) {
          const level = bucketLevel(state, bucket.limit, bucket.windowMs, t) - delta;
          setBucket(bucket.key, Math.min(bucket.limit, level), bucket.limit, bucket.windowMs, t);
        }
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
      const held = heldIn && periods.get(periodKey(heldIn.key, period));
      // Its reservation went with its end user (forgotten): adding would only bring a counter back. A refund
      // goes back only to the counter it was reserved on: one made afresh since its user was forgotten holds
      // the reservations of the user's requests since, which it would cancel (budget given away).
      if (
        heldIn &&
        (!held || amount < 0 && heldIn.generation !== undefined && held.generation !== heldIn.generation)
      ) {
        return Promise.resolve(periodValue(k, t));
      }
      // Never below zero. A counter refunded to zero is kept: it still holds the reservations settled into it
      // later (`heldIn` asks whether it exists), as a returning user's counter does.
      const value = Math.max(0, periodValue(k, t) + (Number.isFinite(amount) ? amount : 0));
      setPeriod(k, value, expiresAt);
      return Promise.resolve(value);
    },
    periodRaise(key, period, value, expiresAt) {
      const t = now();
      sweep(t);
      const k = periodKey(key, period);
      const next = Math.max(periodValue(k, t), Number.isFinite(value) ? value : 0);
      setPeriod(k, next, expiresAt);
      return Promise.resolve(next);
    },
    periodSet(key, period, value, expiresAt) {
      const k = periodKey(key, period);
      const next = Math.max(0, Number.isFinite(value) ? value : 0);
      periodValue(k, now()); // one expired is gone, not kept
      if (next > 0 || periods.has(k)) setPeriod(k, next, expiresAt);
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
