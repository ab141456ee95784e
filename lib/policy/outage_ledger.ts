/**
 * The books the resilient store (resilient_counter_store.ts) keeps for its `fail_open` local limiter's
 * budgets: what the local limiter spent that the shared counters have not got yet, and what each budget had
 * left when the shared store last answered for it.
 *
 * - **Owed spend.** While Redis is away each replica admits and settles against its local limiter, and that
 *   spend is the fleet's too: every amount a local admission reserved in a period counter, and every
 *   correction or settled spend added to one locally, is owed to the shared counter and handed over once
 *   Redis answers again. Without it the shared budget would not know what was spent during an outage, and the
 *   fleet could spend the whole budget again after it. It is taken in batches of at most
 *   {@linkcode HANDOVER_BATCH_MAX} counters: one settlement of every counter an outage touched (end users'
 *   budgets: one or two per user) would be unbounded, and a shared store's call has its limits (a Redis
 *   script's arguments). What a batch does not take stays owed. Bounded by {@linkcode OWED_COUNTERS_MAX}
 *   counters: an amount owed to a counter beyond them, or to one whose period has expired (the shared
 *   counter expires with it), is dropped and counted ({@linkcode OutageLedger.dropped}).
 * - **No refund of what was never added.** A refund (a request settled below its reservation) takes back
 *   from a shared counter at most what this replica owes it or has handed over to it, net of the refunds
 *   before. A reservation the shared counter never got (dropped above, or in a hand-over that failed, which
 *   the shared store's retries may never add) has nothing to give back there: subtracting it would erase
 *   spend the counter really holds (made before the outage, or by other replicas), which the fleet could
 *   then spend again. When in doubt the counter is left high, not low: a failed hand-over backs no refund
 *   even if a retry added it after all, and what was handed over is remembered for the last
 *   {@linkcode OWED_COUNTERS_MAX} counters only (a refund to one forgotten takes back what is still owed).
 * - **What was left.** The local limiter's share of a budget starts from what the budget had left when last
 *   read (÷ the expected replicas), not from the whole budget's share: a budget nearly spent before an outage
 *   stays nearly spent during it. Only what this replica read is known; a budget it never read starts from
 *   the whole share. The last {@linkcode REMEMBERED_BUDGETS_MAX} budgets read are remembered.
 *
 * @module
 */
import type { Check, CheckResult, PeriodCheck, PeriodDelta } from "./counter_store.ts";

/** How many budgets' last remaining amounts are remembered (the least recently read are forgotten first). */
export const REMEMBERED_BUDGETS_MAX = 10_000;

/** How many period counters one hand-over settlement adds to at most. */
export const HANDOVER_BATCH_MAX = 1_000;

/**
 * How many period counters can be owed at once (a few hundred bytes each): an outage long enough for more
 * distinct budgets than that on one replica is not handed over whole.
 */
export const OWED_COUNTERS_MAX = 100_000;

/** The books of one resilient store. */
export interface OutageLedger {
  /**
   * Adds to what is owed to a period counter (negative: a refund settled locally, of at most what is owed
   * and handed over to it: see the module's doc); false when dropped (its period has expired, or
   * {@linkcode OWED_COUNTERS_MAX} other counters are owed already).
   */
  owe(delta: PeriodDelta): boolean;
  /** What is owed to one period counter (0 when nothing). */
  owedTo(key: string, period: string): number;
  /**
   * Up to `max` counters' amounts owed (other than zero, of periods not yet expired), the longest owed first;
   * no longer owed once taken, but handed over (a later refund may take them back).
   */
  take(max: number): PeriodDelta[];
  /**
   * Taken amounts whose hand-over failed, which the shared counter may never get (a shared store's retry
   * may still add them): they no longer back a refund, and a refund owed since is cut to what is left to
   * back it. A refund among them counts as given back, as it may have been.
   */
  failed(deltas: readonly PeriodDelta[]): void;
  /** Taken amounts not sent at all: owed again. */
  unsent(deltas: readonly PeriodDelta[]): void;
  /** How many counters' amounts were dropped since last asked (see {@linkcode owe}). */
  dropped(): number;
  /** Remembers what each period check of a shared store's answer had left. */
  read(checks: readonly Check[], results: readonly CheckResult[]): void;
  /** What `check`'s counter had left when last read, less what was handed over since; undefined if unknown. */
  left(check: PeriodCheck): number | undefined;
  /** Spend handed over to the shared counters: what was last read of them no longer counts it as left. */
  handedOver(deltas: readonly PeriodDelta[]): void;
  /** Forgets what was read of `checks` (an end user forgotten under `max_users`); what is owed stays owed. */
  forget(checks: readonly Check[]): void;
}

const id = (key: string, period: string) => `${key}\u0000${period}`;

/** Options of {@linkcode createOutageLedger}, for tests. */
export interface OutageLedgerOptions {
  /** Replaces {@linkcode OWED_COUNTERS_MAX}. */
  readonly maxOwed?: number;
  /** Told how many owed counters each walk for expired periods visits. */
  readonly onSweep?: (visited: number) => void;
}

/** Makes an empty {@linkcode OutageLedger}; `now` tells when a period counter expired. */
export function createOutageLedger(now: () => number, options: OutageLedgerOptions = {}): OutageLedger {
  const maxOwed = options.maxOwed ?? OWED_COUNTERS_MAX;
  const owed = new Map<string, { -readonly [K in keyof PeriodDelta]: PeriodDelta[K] }>();
  /**
   * What was taken for each counter, net of the refunds taken (in flight or answered), while above zero: with
   * what is owed, what a refund may take back. The least recently handed over are forgotten first.
   */
  const handed = new Map<string, { amount: number; expiresAt: number }>();
  const lefts = new Map<string, { left: number; expiresAt: number }>();
  let dropped = 0;

  /** What was handed over to a counter, net (0 when nothing, forgotten, or its period expired). */
  function handedTo(k: string, t: number): number {
    const entry = handed.get(k);
    return entry && entry.expiresAt > t ? entry.amount : 0;
  }

  /** Adds `amount` to what was handed over to `d`'s counter, kept while above zero, as the most recent. */
  function hand(k: string, d: PeriodDelta, amount: number, t: number): void {
    const entry = handed.get(k);
    const net = handedTo(k, t) + amount;
    handed.delete(k);
    if (net <= 0) return;
    handed.set(k, { amount: net, expiresAt: Math.max(entry?.expiresAt ?? 0, d.expiresAt) });
    if (handed.size > maxOwed) handed.delete(handed.keys().next().value!);
  }

  /**
   * No owed counter's period ends before this: a bound kept as counters are owed (an owed counter's end
   * only moves later), exact after each sweep. A full ledger sweeps for every new counter owed, on a local
   * admission's path; walking its 100,000 counters each time took most of a millisecond, capping a replica
   * near a thousand requests a second for the rest of an outage. Until this time a walk would free nothing,
   * so none is made: a full ledger walks about once each time a period owed to ends (budgets' days and
   * months, a handful per outage), freeing the places of all the counters it ended.
   */
  let sweepAt = Infinity;

  /** Forgets what is owed to counters whose period has expired; counted as dropped. */
  function sweep(t: number): void {
    if (t < sweepAt) return;
    options.onSweep?.(owed.size);
    sweepAt = Infinity;
    for (const [k, d] of owed) {
      if (d.expiresAt <= t) {
        owed.delete(k);
        dropped++;
      } else sweepAt = Math.min(sweepAt, d.expiresAt);
    }
  }

  /** See {@linkcode OutageLedger.owe}. */
  function owe(delta: PeriodDelta): boolean {
    if (!Number.isFinite(delta.amount) || delta.amount === 0) return true;
    const t = now();
    const k = id(delta.key, delta.period);
    const entry = owed.get(k);
    // A refund takes back at most what is owed and handed over (see the module's doc).
    const amount = Math.max(delta.amount, -((entry?.amount ?? 0) + handedTo(k, t)));
    if (amount === 0) return true;
    if (entry) {
      entry.amount += amount;
      entry.expiresAt = Math.max(entry.expiresAt, delta.expiresAt);
      return true;
    }
    if (owed.size >= maxOwed) sweep(t);
    if (delta.expiresAt <= t || owed.size >= maxOwed) {
      dropped++;
      return false;
    }
    owed.set(k, { ...delta, amount });
    sweepAt = Math.min(sweepAt, delta.expiresAt);
    return true;
  }

  return {
    owe,
    owedTo: (key, period) => owed.get(id(key, period))?.amount ?? 0,
    take(max) {
      const t = now();
      const batch: PeriodDelta[] = [];
      for (const [k, d] of owed) {
        if (batch.length >= max) break;
        owed.delete(k);
        if (d.expiresAt <= t) dropped++;
        else if (d.amount !== 0) {
          batch.push(d);
          hand(k, d, d.amount, t);
        }
      }
      return batch;
    },
    failed(deltas) {
      const t = now();
      for (const d of deltas) {
        const k = id(d.key, d.period);
        if (d.amount > 0) hand(k, d, -d.amount, t);
        const entry = owed.get(k);
        if (entry) entry.amount = Math.max(entry.amount, 0 - handedTo(k, t)); // 0 -: never -0
      }
    },
    unsent(deltas) {
      const t = now();
      for (const d of deltas) {
        hand(id(d.key, d.period), d, -d.amount, t);
        owe(d);
      }
    },
    dropped() {
      const n = dropped;
      dropped = 0;
      return n;
    },
    read(checks, results) {
      checks.forEach((check, i) => {
        const result = results[i];
        if (check.kind !== "period" || !result) return;
        const k = id(check.key, check.period);
        // Deleted first, so the Map's order is the order of reading and the oldest is evicted.
        lefts.delete(k);
        lefts.set(k, { left: result.remaining, expiresAt: check.expiresAt ?? Infinity });
        if (lefts.size > REMEMBERED_BUDGETS_MAX) lefts.delete(lefts.keys().next().value!);
      });
    },
    left(check) {
      const k = id(check.key, check.period);
      const entry = lefts.get(k);
      if (entry === undefined) return undefined;
      if (entry.expiresAt > now()) return entry.left;
      lefts.delete(k);
      return undefined;
    },
    handedOver(deltas) {
      for (const d of deltas) {
        const entry = lefts.get(id(d.key, d.period));
        if (entry) entry.left = Math.max(0, entry.left - d.amount);
      }
    },
    forget(checks) {
      for (const c of checks) if (c.kind === "period") lefts.delete(id(c.key, c.period));
    },
  };
}
