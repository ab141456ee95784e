/**
 * Alerts: budget thresholds, denial bursts and ejections, each decided once for a whole fleet and posted to
 * the receivers that asked for that kind (`alerts:`, lib/config/alerts_schema.ts).
 *
 * Once per fleet: every replica sees the same crossing (they share the budget's counter), so each claims the
 * alert in the shared counter store with one atomic `periodAdd` and only the caller that gets back the
 * deciding count sends. A budget threshold is claimed per (budget, period, percent): the caller that gets 1.
 * Denials are counted per (rule, owner) in fixed windows: the caller whose denial is number `count + 1` sends,
 * once per window. An ejection is claimed per (target, `until` to the second). When the store fails, nothing is
 * sent: a missed alert is reported (`onError`), while a guessed one would reach the receiver once per replica.
 *
 * Nothing here makes a request wait or fail: each method only starts the store's call and returns; what the
 * calls find is sent through the bounded queue of delivery.ts. Every map is bounded, and so are the keys, since
 * rule, owner and name come from operators and requests.
 *
 * @module
 */
import type { AlertsConfig } from "../config/alerts_schema.ts";
import type { CounterStore } from "../policy/counter_store.ts";
import { type AlertBody, type AlertType, createDelivery, type DeliveryState, hostOf } from "./delivery.ts";

/** A budget in one period, as its alerts name it. */
export interface BudgetRef {
  readonly scope: "token" | "team" | "end_user";
  /** What people read: the token's, team's or end user's name. */
  readonly name: string;
  /** The budget's counter key (stable across renames); part of the claim's key. */
  readonly key: string;
  readonly unit: "tokens" | "cost";
  readonly limit: number;
  /** The budget's period (lib/policy/budgets.ts `BudgetPeriod`): its id and exclusive end (epoch ms). */
  readonly period: { readonly id: string; readonly end: number };
}

/**
 * A budget's settled spend after a request settled, in the budget's unit: what requests that ended really used,
 * never the budget's counter, which also holds the estimates reserved by requests still running.
 */
export interface BudgetUsedEvent extends BudgetRef {
  readonly used: number;
}

/**
 * A request the budget denied: it counts as reaching 100 % (and every lower threshold), since admission denies
 * once spend plus a request's estimate would pass the limit, so a budget that denies everything may never see
 * its spend reach the limit. `spent` reads the settled spend, for the alert's `used`: once per event, before
 * claiming, and only while a threshold is not yet known here to be claimed.
 */
export interface BudgetDeniedEvent extends BudgetRef {
  spent(): Promise<number>;
}

/** A request denied by a counted limit. */
export interface DeniedEvent {
  /** The rule that denied, e.g. "token.rpm", "team.budget". */
  readonly rule: string;
  /** The token's, team's or alias's name, or the end user's label (its id cut short): what people read. */
  readonly owner: string;
  /**
   * Who was denied, by identity (the denying counter's key): what denials are counted by, so that two owners
   * whose labels read the same (end users sharing a long id's start, a renamed token) are counted apart.
   */
  readonly key: string;
}

/** A target ejected by outlier detection. */
export interface EjectedEvent {
  readonly target: string;
  readonly provider?: string;
  /** When it is let back (ISO). */
  readonly until: string;
  readonly failures: number;
}

/** One alert as `recent()` shows it. */
export interface AlertView {
  readonly alert: AlertBody;
  /** One per receiver: its index in `alerts:`, its host (never the path or query), and how delivery goes. */
  readonly deliveries: readonly ({ readonly target: number; readonly host: string } & DeliveryState)[];
}

/** Options of {@linkcode createAlerts}. */
export interface AlertsOptions {
  /** The clock (epoch ms): alert times and denial windows. */
  readonly now?: () => number;
  /** Tests: the `fetch` that sends. */
  readonly fetch?: typeof fetch;
  /** The first retry's delay (doubling). Default 1 s. */
  readonly backoffMs?: number;
  /** Deliveries held at most. Default 1,000. */
  readonly maxQueue?: number;
  /** A store call failed, too many were pending, or a delivery failed or was dropped. */
  readonly onError?: (error: Error) => void;
}

/** The alerts of one replica. */
export interface Alerts {
  /** After a budget's settled spend grew. Never blocks; never throws. */
  budgetUsed(event: BudgetUsedEvent): void;
  /** A request was denied by its budget. Never blocks; never throws. */
  budgetDenied(event: BudgetDeniedEvent): void;
  /** A request was denied by a counted limit. Never blocks; never throws. */
  denied(event: DeniedEvent): void;
  /** A target was ejected by outlier detection. Never blocks; never throws. */
  ejected(event: EjectedEvent): void;
  /** The most recent alerts this replica sent, newest first (at most {@linkcode RECENT_MAX}). */
  recent(): AlertView[];
  /**
   * Stops: waits (bounded) for pending store calls, then sends the deliveries held, claimed already (bounded
   * too; what is left at the deadline is reported through `onError`).
   */
  close(): Promise<void>;
}

/** Alerts kept for `recent()`. */
export const RECENT_MAX = 100;
/** Claims remembered locally, so a replica asks the store about a claimed alert once. */
const CLAIMED_MAX = 10_000;
/** Store calls pending at most; past it events are skipped (a store that slow is failing anyway). */
const PENDING_MAX = 256;
/** Rule, owner, name and key longer than this are cut and suffixed with a hash of the whole. */
const KEY_MAX = 200;
/** How long a claim outlives the period or ejection it is about. */
const CLAIM_GRACE_MS = 3_600_000;
/** How long a denial counter outlives its window. */
const WINDOW_SLACK_MS = 60_000;

/** 64 bits of FNV-1a (two 32-bit lanes) as hex: synchronous, which WebCrypto's digest is not. */
function hash64(text: string): string {
  let a = 0x811c9dc5, b = 0x01000193 ^ 0x9e3779b9;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (a >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}

/** `text`, or when longer than {@linkcode KEY_MAX} its start and a hash of the whole (still distinct). */
export function capKey(text: string): string {
  return text.length <= KEY_MAX ? text : `${text.slice(0, KEY_MAX - 17)}~${hash64(text)}`;
}

/**
 * Where the claim on a budget's threshold lives: the counter (by the budget's counter key, capped) and its
 * period. Seeding takes the claims of thresholds passed before a start here too (policy_hooks.ts).
 */
export function budgetClaim(
  key: string,
  percent: number,
  periodId: string,
): { counter: string; period: string } {
  return { counter: `alert:budget:${capKey(key)}:${percent}`, period: capKey(periodId) };
}

/** When a budget's claim is forgotten: after its period, with room for a late settlement. */
export function budgetClaimExpiry(periodEnd: number, now: number): number {
  return Math.max(periodEnd, now) + CLAIM_GRACE_MS;
}

function alertId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `alr_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** Creates the alerts of one replica over the fleet's `store`. */
export function createAlerts(config: AlertsConfig, store: CounterStore, options: AlertsOptions = {}): Alerts {
  const now = options.now ?? Date.now;
  const onError = options.onError ?? (() => {});
  const delivery = createDelivery({
    fetch: options.fetch,
    backoffMs: options.backoffMs,
    maxQueue: options.maxQueue,
    onError,
  });
  const targets = config.map((target, index) => ({ target, index, host: hostOf(target.url) }));
  type Receiver = (typeof targets)[number];
  const thresholds = [...new Set(config.flatMap((t) => t.budget_thresholds ?? []))].sort((a, b) => a - b);
  const denialWindows = [...new Set(config.flatMap((t) => t.denials ? [t.denials.minutes] : []))];
  const ejectionTargets = targets.filter((r) => r.target.ejections);
  /** Claims this replica knows are taken (by it or another), and those it is asking about. */
  const claimed = new Map<string, true>();
  const asking = new Set<string>();
  const pending = new Set<Promise<void>>();
  const recent: { alert: AlertBody; deliveries: { target: number; host: string; state: DeliveryState }[] }[] =
    [];
  let skipped = 0;
  let lastSkipReport = -Infinity;
  /** No new store calls once closing; no new sends once closed. */
  let closing = false;
  let closed = false;

  function report(what: string, cause?: unknown): void {
    try {
      onError(new Error(`alerts: ${what}`, cause === undefined ? undefined : { cause }));
    } catch {
      // A failing reporter must not reach the request path.
    }
  }

  function remember(claim: string): void {
    claimed.set(claim, true);
    if (claimed.size > CLAIMED_MAX) claimed.delete(claimed.keys().next().value!);
  }

  /** Sends one alert to `to` and records it for `recent()`. */
  function send(type: AlertType, fields: Readonly<Record<string, unknown>>, to: readonly Receiver[]): void {
    if (to.length === 0) return;
    const alert: AlertBody = { id: alertId(), type, time: new Date(now()).toISOString(), ...fields };
    const deliveries = to.map((r) => ({
      target: r.index,
      host: r.host,
      state: delivery.enqueue(r.target, alert),
    }));
    recent.unshift({ alert, deliveries });
    if (recent.length > RECENT_MAX) recent.pop();
  }

  /**
   * Adds 1 to a period counter in the store without waiting, then hands the new count to `then`. A claim
   * (`claim` set) already known, or being asked about, is not asked again; a failed call skips the alert.
   * `before` runs first, and its failure skips the alert without counting: whatever the alert needs that can
   * fail is read there, since a claim taken for an alert that then cannot be built is lost for the fleet.
   */
  function count(
    key: string,
    period: string,
    expiresAt: number,
    claim: string | undefined,
    then: (n: number) => void | Promise<void>,
    before?: () => Promise<void>,
  ): void {
    if (closing || (claim !== undefined && (claimed.has(claim) || asking.has(claim)))) return;
    if (pending.size >= PENDING_MAX) {
      skipped++;
      const t = now();
      if (t - lastSkipReport >= 60_000) {
        lastSkipReport = t;
        report(`${skipped} event(s) skipped so far: ${PENDING_MAX} counter store calls pending`);
      }
      return;
    }
    if (claim !== undefined) asking.add(claim);
    const p = (async () => {
      try {
        await before?.();
        const n = await store.periodAdd(key, period, 1, expiresAt);
        if (claim !== undefined) remember(claim);
        if (!closed) await then(n);
      } catch (error) {
        report(`counter store failed for ${key}; alert skipped`, error);
      } finally {
        if (claim !== undefined) asking.delete(claim);
      }
    })();
    pending.add(p);
    p.finally(() => pending.delete(p));
  }

  /**
   * Claims each threshold, in ascending order, while `reached(percent)` holds, and posts those this replica
   * claimed first, with `used()` as the spend. The spend is read before claiming (once for all thresholds):
   * read after, a store error would leave a claim taken and no alert sent, the threshold lost for the whole
   * fleet for the period; read before, it skips the event and a later one claims the threshold.
   */
  function budgetThresholds(
    e: BudgetRef,
    reached: (percent: number) => boolean,
    used: () => number | Promise<number>,
  ): void {
    if (thresholds.length === 0 || !(e.limit > 0)) return;
    let reading: Promise<number> | undefined;
    let spent = 0;
    const readSpend = async () => void (spent = await (reading ??= Promise.resolve().then(used)));
    for (const p of thresholds) {
      if (!reached(p)) break;
      const { counter, period: periodId } = budgetClaim(e.key, p, e.period.id);
      count(
        counter,
        periodId,
        budgetClaimExpiry(e.period.end, now()),
        `${counter}\n${periodId}`,
        (n) => {
          if (n !== 1) return;
          const to = targets.filter((r) => r.target.budget_thresholds?.includes(p));
          send("budget", {
            scope: e.scope,
            name: capKey(e.name),
            unit: e.unit,
            used: spent,
            limit: e.limit,
            threshold: p,
            period: { id: periodId, end: new Date(e.period.end).toISOString() },
          }, to);
        },
        readSpend,
      );
    }
  }

  function budgetUsed(e: BudgetUsedEvent): void {
    if (!Number.isFinite(e.used)) return;
    // Not used / limit * 100: 0.29 / 1 * 100 < 29.
    budgetThresholds(e, (p) => e.used >= (e.limit * p) / 100, () => e.used);
  }

  function budgetDenied(e: BudgetDeniedEvent): void {
    budgetThresholds(e, (p) => p <= 100, () => e.spent());
  }

  function denied(e: DeniedEvent): void {
    if (denialWindows.length === 0) return;
    const rule = capKey(e.rule);
    const owner = capKey(e.owner);
    const who = capKey(e.key);
    const t = now();
    for (const minutes of denialWindows) {
      const windowMs = minutes * 60_000;
      const windowId = Math.floor(t / windowMs);
      const windowEnd = (windowId + 1) * windowMs;
      const group = targets.filter((r) => r.target.denials?.minutes === minutes);
      const last = Math.max(...group.map((r) => r.target.denials!.count)) + 1;
      const counter = `alert:denials:${rule}:${who}`;
      const period = `${minutes}m:${windowId}`;
      // Past the last count any receiver alerts at, nothing more can happen in this window: stop asking.
      const done = `${counter}\n${period}`;
      if (claimed.has(done)) continue;
      count(counter, period, windowEnd + WINDOW_SLACK_MS, undefined, (n) => {
        if (n >= last) remember(done);
        const to = group.filter((r) => r.target.denials!.count + 1 === n);
        send("denials", {
          rule,
          owner,
          count: n - 1,
          minutes,
          window_start: new Date(windowId * windowMs).toISOString(),
        }, to);
      });
    }
  }

  function ejected(e: EjectedEvent): void {
    if (ejectionTargets.length === 0) return;
    const target = capKey(e.target);
    const untilMs = Date.parse(e.until);
    const second = Number.isFinite(untilMs) ? String(Math.round(untilMs / 1_000)) : capKey(e.until);
    const counter = `alert:ejection:${target}`;
    const expiresAt = Math.max(Number.isFinite(untilMs) ? untilMs : 0, now()) + CLAIM_GRACE_MS;
    count(counter, second, expiresAt, `${counter}\n${second}`, (n) => {
      if (n !== 1) return;
      send("ejection", {
        target,
        ...(e.provider === undefined ? {} : { provider: capKey(e.provider) }),
        until: e.until.slice(0, 64),
        failures: e.failures,
      }, ejectionTargets);
    });
  }

  /** Runs `fn` so that nothing it throws reaches the caller. */
  function guarded<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      try {
        fn(...args);
      } catch (error) {
        report("an event could not be handled", error);
      }
    };
  }

  return {
    budgetUsed: guarded(budgetUsed),
    budgetDenied: guarded(budgetDenied),
    denied: guarded(denied),
    ejected: guarded(ejected),
    recent: () =>
      recent.map(({ alert, deliveries }) => ({
        alert,
        deliveries: deliveries.map(({ target, host, state: { status, attempts, error } }) => ({
          target,
          host,
          status,
          attempts,
          ...(error === undefined ? {} : { error }),
        })),
      })),
    async close() {
      if (closing) return;
      closing = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = new Promise<void>((resolve) => timer = setTimeout(resolve, 5_000));
      await Promise.race([Promise.all(pending), timedOut]);
      clearTimeout(timer);
      closed = true;
      await delivery.close();
    },
  };
}
