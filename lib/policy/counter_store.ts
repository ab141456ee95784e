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
  /**
   * Which counter a taking check took from, on a store that forgets counters (the memory store numbers each
   * one it makes): its settlement names it ({@linkcode BucketRef.generation}, {@linkcode HeldIn}), so a
   * refund goes back to that counter only, never to one made afresh after it was forgotten (an end user
   * pushed out of `max_users` and back). Absent on a store that never forgets (a shared one).
   */
  readonly generation?: number;
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

/**
 * A bucket as {@linkcode CounterStore.adjust} names it; with the {@linkcode CheckResult.generation} of the
 * reservation it corrects, a refund (negative delta) is given back only to that bucket: one made afresh since
 * (its user forgotten, or it refilled whole) holds another request's take, which the refund would cancel.
 * Usage beyond the reservation (positive) is charged to the bucket as it is.
 */
export type BucketRef = Pick<BucketCheck, "key" | "limit" | "windowMs"> & { readonly generation?: number };

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
  periodAdd(key: string, period: string, amount: number, expiresAt: number, heldIn?: HeldIn): Promise<number>;
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
  readonly heldIn?: HeldIn;
}

/**
 * The counter a reservation was taken on, for {@linkcode PeriodDelta.heldIn}: its key and, where the store
 * numbered it, its {@linkcode CheckResult.generation}. A settlement is added only while that counter exists;
 * a refund (negative) only while it is that very counter: one made afresh since (the user forgotten and back)
 * holds the returning requests' reservations, which the refund would cancel. Spend beyond the reservation is
 * added to it as it is (the user really used it).
 */
export interface HeldIn {
  readonly key: string;
  readonly generation?: number;
}
