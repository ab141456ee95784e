/**
 * The books the resilient store (resilient_counter_store.ts) keeps for its `fail_open` local limiter's
 * budgets: what the local limiter spent that the shared counters have not got yet, what each local
 * reservation got onto them, and what each budget had left when the shared store last answered for it.
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
 * - **A refund takes back only its own reservation.** A refund (a request settled below its reservation)
 *   takes back from a shared counter at most what that request's own reservation got onto it, or still owes
 *   it: each local reservation is remembered with the owed amount (a "lot": one counter's owed spend from
 *   when it is first owed until its hand-over is answered) it joined, and a lot says where it went (still
 *   owed, being handed over, on the shared counter, or lost). A reservation the shared counter never got
 *   (dropped above, or in a hand-over that failed, which the shared store's retries may never add) has
 *   nothing to give back there: subtracting it would erase spend the counter really holds (made before the
 *   outage, by other requests during it, or by other replicas), which the fleet could then spend again. A
 *   counter's total is no measure of that: another request's spend, or a past outage's hand-over, is not this
 *   reservation's to give back. When in doubt the counter is left high, not low: a failed hand-over backs no
 *   refund even if a retry added it after all, a refund settled while its reservation's hand-over is under
 *   way waits for its answer (owed if it succeeded, dropped if it failed), and a refund naming no
 *   reservation, or one forgotten, takes nothing back. The last {@linkcode RESERVATIONS_MAX} local
 *   reservations not yet settled are remembered (one settled is forgotten; so is the oldest beyond them,
 *   whose refund then stays in the shared counter).
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

/**
 * How many local reservations not yet settled are remembered with what they got onto the shared counters (a
 * few hundred bytes each): far more requests than one replica runs at once. One settled is forgotten; beyond
 * them the oldest is (a request that never settled, or one running that long), and its refund then takes
 * nothing back from the shared counter.
 */
export const RESERVATIONS_MAX = 100_000;

/** The books of one resilient store. */
export interface OutageLedger {
  /**
   * Adds spend to what is owed to a period counter: a correction or a settled spend, no reservation's. A
   * refund (negative) here names no reservation, so it takes nothing back from the shared counter. False
   * when dropped (its period has expired, or {@linkcode OWED_COUNTERS_MAX} other counters are owed already).
   */
  owe(delta: PeriodDelta): boolean;
  /**
   * A local admission's reservation, named `reservation`: its amounts owed as {@linkcode owe}, and remembered
   * as what its refund may take back (see the module's doc). False when none was owed (nothing to remember).
   */
  reserve(reservation: string, deltas: readonly PeriodDelta[]): boolean;
  /**
   * Settles a local admission: its spend beyond the reservation is owed, and a refund takes back at most what
   * that reservation got onto the shared counter or still owes it; the reservation is forgotten.
   */
  settle(reservation: string | undefined, deltas: readonly PeriodDelta[]): void;
  /** What is owed to one period counter (0 when nothing). */
  owedTo(key: string, period: string): number;
  /**
   * Up to `max` counters' amounts owed (other than zero, of periods not yet expired), the longest owed first;
   * no longer owed once taken. Each is told back as {@linkcode handedOver}, {@linkcode failed} or
   * {@linkcode unsent}.
   */
  take(max: number): PeriodDelta[];
  /**
   * Taken amounts whose hand-over failed, which the shared counter may never get (a shared store's retry may
   * still add them): they back no refund, and a refund settled while they were sent is dropped. A refund
   * among them counts as given back, as it may have been.
   */
  failed(deltas: readonly PeriodDelta[]): void;
  /** Taken amounts not sent at all: owed again. */
  unsent(deltas: readonly PeriodDelta[]): void;
  /**
   * Taken amounts the shared counters got: they back their reservations' refunds (those settled meanwhile
   * are owed now), and what was last read of those counters no longer counts them as left.
   */
  handedOver(deltas: readonly PeriodDelta[]): void;
  /** How many counters' amounts were dropped since last asked (see {@linkcode owe}). */
  dropped(): number;
  /** Remembers what each period check of a shared store's answer had left. */
  read(checks: readonly Check[], results: readonly CheckResult[]): void;
  /** What `check`'s counter had left when last read, less what was handed over since; undefined if unknown. */
  left(check: PeriodCheck): number | undefined;
  /** Forgets what was read of `checks` (an end user forgotten under `max_users`); what is owed stays owed. */
  forget(checks: readonly Check[]): void;
}

/**
 * One counter's owed spend from when it is first owed until its hand-over is answered: where it went is
 * where the reservations in it went.
 */
interface Lot {
  readonly key: string;
  readonly period: string;
  amount: number;
  expiresAt: number;
  /**
   * `owed`: not taken yet; `sending`: taken, its hand-over not answered; `handed`: its net amount is on the
   * shared counter; `lost`: dropped, or its hand-over failed (maybe never added).
   */
  state: "owed" | "sending" | "handed" | "lost";
  /** While `sending`: its reservations' refunds (negative) settled meanwhile, owed once it is handed over. */
  waiting: number;
  /** Owed again inside another lot (not sent, its counter owed since): where its reservations are now. */
  into?: Lot;
}

/** What one reservation put into a counter's lot, which its refund may take back. */
interface Share {
  readonly k: string;
  readonly lot: Lot;
  amount: number;
}

const id = (key: string, period: string) => `${key}\u0000${period}`;

/** Options of {@linkcode createOutageLedger}, for tests. */
export interface OutageLedgerOptions {
  /** Replaces {@linkcode OWED_COUNTERS_MAX}. */
  readonly maxOwed?: number;
  /** Replaces {@linkcode RESERVATIONS_MAX}. */
  readonly maxReservations?: number;
  /** Told how many owed counters each walk for expired periods visits. */
  readonly onSweep?: (visited: number) => void;
}

/** Makes an empty {@linkcode OutageLedger}; `now` tells when a period counter expired. */
export function createOutageLedger(now: () => number, options: OutageLedgerOptions = {}): OutageLedger {
  const maxOwed = options.maxOwed ?? OWED_COUNTERS_MAX;
  const maxReservations = options.maxReservations ?? RESERVATIONS_MAX;
  const owed = new Map<string, Lot>();
  /** The lot each taken amount is of, until it is told back. */
  const taken = new WeakMap<PeriodDelta, Lot>();
  /** What each local reservation not yet settled put into which lot; the oldest first. */
  const reservations = new Map<string, Share[]>();
  const lefts = new Map<string, { left: number; expiresAt: number }>();
  let dropped = 0;

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
    for (const [k, lot] of owed) {
      if (lot.expiresAt <= t) {
        owed.delete(k);
        lot.state = "lost";
        dropped++;
      } else sweepAt = Math.min(sweepAt, lot.expiresAt);
    }
  }

  /** Owes `lot` (not owed yet) as its counter's: false, and lost, when dropped. */
  function place(k: string, lot: Lot, t: number): boolean {
    if (owed.size >= maxOwed) sweep(t);
    if (lot.expiresAt <= t || owed.size >= maxOwed) {
      lot.state = "lost";
      dropped++;
      return false;
    }
    lot.state = "owed";
    owed.set(k, lot);
    sweepAt = Math.min(sweepAt, lot.expiresAt);
    return true;
  }

  /** Adds `amount` to what is owed to `d`'s counter; the lot it is in, undefined when dropped. */
  function add(k: string, d: PeriodDelta, amount: number): Lot | undefined {
    const lot = owed.get(k);
    if (lot) {
      lot.amount += amount;
      lot.expiresAt = Math.max(lot.expiresAt, d.expiresAt);
      return lot;
    }
    const fresh: Lot = {
      key: d.key,
      period: d.period,
      amount,
      expiresAt: d.expiresAt,
      state: "owed",
      waiting: 0,
    };
    return place(k, fresh, now()) ? fresh : undefined;
  }

  /** Gives back up to `refund` (> 0) of what `share`'s reservation put into its lot, wherever that went. */
  function giveBack(share: Share, d: PeriodDelta, refund: number): void {
    const back = Math.min(refund, share.amount);
    if (!(back > 0)) return;
    share.amount -= back;
    let lot = share.lot;
    while (lot.into) lot = lot.into;
    if (lot.state === "owed") lot.amount -= back; // not handed over yet: owed less
    else if (lot.state === "sending") lot.waiting -= back; // owed once the shared counter has it
    else if (lot.state === "handed") add(id(d.key, d.period), d, -back);
    // lost: the shared counter may never have got it, so there is nothing of it to give back
  }

  const finite = (d: PeriodDelta) => Number.isFinite(d.amount) && d.amount !== 0;

  function owe(delta: PeriodDelta): boolean {
    if (!finite(delta) || delta.amount < 0) return true;
    return add(id(delta.key, delta.period), delta, delta.amount) !== undefined;
  }

  return {
    owe,
    reserve(reservation, deltas) {
      const shares: Share[] = [];
      for (const d of deltas) {
        if (!finite(d) || d.amount < 0) continue;
        const k = id(d.key, d.period);
        const lot = add(k, d, d.amount);
        if (lot) shares.push({ k, lot, amount: d.amount });
      }
      if (shares.length === 0) return false;
      reservations.set(reservation, shares);
      if (reservations.size > maxReservations) reservations.delete(reservations.keys().next().value!);
      return true;
    },
    settle(reservation, deltas) {
      const shares = reservation === undefined ? undefined : reservations.get(reservation);
      if (shares) reservations.delete(reservation!);
      for (const d of deltas) {
        if (!finite(d)) continue;
        if (d.amount > 0) {
          owe(d);
          continue;
        }
        const k = id(d.key, d.period);
        let refund = -d.amount;
        for (const share of shares ?? []) {
          if (share.k !== k) continue;
          const before = share.amount;
          giveBack(share, d, refund);
          refund -= before - share.amount;
        }
      }
    },
    owedTo: (key, period) => owed.get(id(key, period))?.amount ?? 0,
    take(max) {
      const t = now();
      const batch: PeriodDelta[] = [];
      for (const [k, lot] of owed) {
        if (batch.length >= max) break;
        owed.delete(k);
        if (lot.expiresAt <= t) {
          lot.state = "lost";
          dropped++;
        } else if (lot.amount === 0) {
          lot.state = "handed"; // what its reservations added and what refunds took back net out
        } else {
          lot.state = "sending";
          const d: PeriodDelta = {
            key: lot.key,
            period: lot.period,
            amount: lot.amount,
            expiresAt: lot.expiresAt,
          };
          taken.set(d, lot);
          batch.push(d);
        }
      }
      return batch;
    },
    failed(deltas) {
      for (const d of deltas) {
        const lot = taken.get(d);
        if (lot?.state !== "sending") continue;
        lot.state = "lost";
        lot.waiting = 0;
      }
    },
    unsent(deltas) {
      const t = now();
      for (const d of deltas) {
        const lot = taken.get(d);
        if (lot?.state !== "sending") continue;
        const k = id(d.key, d.period);
        lot.amount += lot.waiting;
        lot.waiting = 0;
        const since = owed.get(k);
        if (since) {
          since.amount += lot.amount;
          since.expiresAt = Math.max(since.expiresAt, lot.expiresAt);
          lot.into = since;
        } else place(k, lot, t);
      }
    },
    handedOver(deltas) {
      for (const d of deltas) {
        const lot = taken.get(d);
        if (lot?.state === "sending") {
          lot.state = "handed";
          if (lot.waiting !== 0) add(id(d.key, d.period), d, lot.waiting);
          lot.waiting = 0;
        }
        const entry = lefts.get(id(d.key, d.period));
        if (entry) entry.left = Math.max(0, entry.left - d.amount);
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
    forget(checks) {
      for (const c of checks) if (c.kind === "period") lefts.delete(id(c.key, c.period));
    },
  };
}
