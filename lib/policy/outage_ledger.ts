/**
 * The books the resilient store (resilient_counter_store.ts) keeps for its `fail_open` local limiter's
 * budgets: what the local limiter spent that the shared counters have not got yet, and what each budget had
 * left when the shared store last answered for it.
 *
 * - **Owed spend.** While Redis is away each replica admits and settles against its local limiter, and that
 *   spend is the fleet's too: every amount a local admission reserved in a period counter, and every
 *   correction or settled spend added to one locally, is owed to the shared counter and handed over once
 *   Redis answers again. Without it the shared budget would not know what was spent during an outage, and the
 *   fleet could spend the whole budget again after it.
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

/** The books of one resilient store. */
export interface OutageLedger {
  /** Adds to what is owed to a period counter (negative: a refund settled locally). */
  owe(delta: PeriodDelta): void;
  /** What is owed to one period counter (0 when nothing). */
  owedTo(key: string, period: string): number;
  /** Everything owed (amounts other than zero), which is no longer owed once taken. */
  take(): PeriodDelta[];
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

/** Makes an empty {@linkcode OutageLedger}; `now` tells when a remembered budget's period counter expired. */
export function createOutageLedger(now: () => number): OutageLedger {
  const owed = new Map<string, { -readonly [K in keyof PeriodDelta]: PeriodDelta[K] }>();
  const lefts = new Map<string, { left: number; expiresAt: number }>();
  return {
    owe(delta) {
      if (!Number.isFinite(delta.amount) || delta.amount === 0) return;
      const k = id(delta.key, delta.period);
      const entry = owed.get(k);
      if (!entry) owed.set(k, { ...delta });
      else {
        entry.amount += delta.amount;
        entry.expiresAt = Math.max(entry.expiresAt, delta.expiresAt);
      }
    },
    owedTo: (key, period) => owed.get(id(key, period))?.amount ?? 0,
    take() {
      const all = [...owed.values()].filter((d) => d.amount !== 0);
      owed.clear();
      return all;
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
