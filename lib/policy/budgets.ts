/**
 * Budgets: a spending cap over a calendar period in UTC (a day or a month), in tokens or in money, of a token,
 * of a team (shared by its member tokens) or of an end user of an application.
 *
 * A request reserves its estimated cost before it is admitted (the prompt estimate plus the requested
 * maximum output for each choice, in tokens, or priced at the alias's dearest target rate:
 * lib/http/accounting.ts `chatTokenEstimate`) and is admitted only if the period's total with the
 * reservation stays within the cap; when it settles (answered, failed, a stream ended or abandoned), the
 * difference between its real usage and the reservation is added. So concurrent
 * requests, on one replica or a fleet sharing a Redis store, never overshoot a budget by more than their
 * estimates' error. A reservation is capped at the whole budget, so a request estimated above it can still
 * run on an untouched budget. A request with no estimate (e.g. `/v1/models`) reserves nothing and is
 * admitted while the total is below the cap. A request is charged to the period in which it was admitted.
 *
 * @module
 */
import type { BudgetConfig } from "../config/schema.ts";
import type { ResolvedTeam, ResolvedToken } from "../config/types.ts";
import type { CheckResult, CounterStore, PeriodCheck, PeriodDelta } from "./counter_store.ts";
import { PolicyDenied } from "./denied.ts";

/** One budget period: its id (the counter's period key) and its bounds in epoch ms. */
export interface BudgetPeriod {
  /** "2026-11-22" for a day, "2026-11" for a month. */
  readonly id: string;
  readonly start: number;
  /** Exclusive. */
  readonly end: number;
}

/** How long a period counter is kept after its period ends (nothing reads it then; this is slack). */
const PERIOD_GRACE_MS = 3_600_000;

/** The UTC day or month that contains `now`; the server also uses it to seed counters from stored usage. */
export function budgetPeriod(period: BudgetConfig["period"], now: number): BudgetPeriod {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const month = String(m + 1).padStart(2, "0");
  if (period === "month") {
    return { id: `${y}-${month}`, start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
  }
  const day = d.getUTCDate();
  return {
    id: `${y}-${month}-${String(day).padStart(2, "0")}`,
    start: Date.UTC(y, m, day),
    end: Date.UTC(y, m, day + 1),
  };
}

/** What a budget counts and its cap: tokens, or money in the price table's currency. */
export function budgetUnit(budget: BudgetConfig): { unit: "tokens" | "cost"; limit: number } | null {
  if (budget.tokens !== undefined) return { unit: "tokens", limit: budget.tokens };
  if (budget.cost !== undefined) return { unit: "cost", limit: budget.cost };
  return null;
}

/**
 * The counter key of a token's budget, by the token's identity (`ResolvedToken.id`), not its name: a name
 * reissued after a revoke is another token and starts its own budget. The unit is part of the key so that
 * changing the unit starts afresh.
 */
export function budgetKey(tokenId: string, unit: "tokens" | "cost"): string {
  return `token:${tokenId}:budget:${unit}`;
}

/** Whose budget: a token's own, its team's, or one end user's. */
export type BudgetScope = "token" | "team" | "end_user";

/** A budget and who it belongs to. */
export interface BudgetOwner {
  readonly scope: BudgetScope;
  /** For messages: the token's or team's name, or "user U of token T" / "user U of model M". */
  readonly name: string;
  /** The counter key's owner part: `token:<id>`, `team:<id>`, `end_user:…`; never a reusable name. */
  readonly keyBase: string;
  readonly budget: BudgetConfig;
}

/** A token's own budget as a {@linkcode BudgetOwner}, or null. */
export function tokenBudgetOwner(token: ResolvedToken): BudgetOwner | null {
  return token.budget
    ? { scope: "token", name: token.name, keyBase: `token:${token.id}`, budget: token.budget }
    : null;
}

/** A team's budget as a {@linkcode BudgetOwner}, keyed by the team's id; null without a team or a budget. */
export function teamBudgetOwner(team: ResolvedTeam | null | undefined): BudgetOwner | null {
  return team?.budget
    ? { scope: "team", name: team.name, keyBase: `team:${team.id}`, budget: team.budget }
    : null;
}

/** The budgets a token's request reserves against before any end user's: its own, then its team's. */
export function tokenBudgetOwners(token: ResolvedToken): BudgetOwner[] {
  return [tokenBudgetOwner(token), teamBudgetOwner(token.team)].filter((o): o is BudgetOwner => o !== null);
}

/** A budget check with who it belongs to. */
export interface OwnedBudgetCheck {
  readonly owner: BudgetOwner;
  readonly check: PeriodCheck;
  readonly period: BudgetPeriod;
  readonly unit: "tokens" | "cost";
}

/** The check that reserves a request's estimate against `owner`'s budget for the current period. */
export function ownerBudgetCheck(
  owner: BudgetOwner,
  now: number,
  estimate: BudgetEstimate = { tokens: 0, cost: 0 },
): OwnedBudgetCheck | null {
  const u = budgetUnit(owner.budget);
  if (!u) return null;
  const period = budgetPeriod(owner.budget.period, now);
  const wanted = u.unit === "tokens" ? Math.ceil(estimate.tokens) : estimate.cost;
  const amount = Number.isFinite(wanted) && wanted > 0 ? Math.min(u.limit, wanted) : 0;
  return {
    owner,
    unit: u.unit,
    period,
    check: {
      kind: "period",
      key: `${owner.keyBase}:budget:${u.unit}`,
      period: period.id,
      limit: u.limit,
      amount,
      expiresAt: period.end + PERIOD_GRACE_MS,
    },
  };
}

/**
 * What settling adds to a reserved budget: the real usage in its unit minus the reservation, to the period it
 * was reserved in; null when nothing changes. `taken` is what the store really reserved when it differs from
 * the check's amount (the local limiter of `fail_open` caps it at the replica's share): the correction must
 * start from what the counter holds, or the counter would end below (or above) the real usage.
 */
export function reservedSettlement(
  reserved: OwnedBudgetCheck,
  actual: { tokens: number; cost: number },
  taken: number = reserved.check.amount ?? 0,
): PeriodDelta | null {
  const raw = reserved.unit === "tokens" ? actual.tokens : actual.cost;
  const used = Number.isFinite(raw) && raw > 0 ? raw : 0;
  const amount = used - taken;
  if (amount === 0) return null;
  const { key, period, expiresAt } = reserved.check;
  return { key, period, amount, expiresAt: expiresAt ?? reserved.period.end + PERIOD_GRACE_MS };
}

/**
 * The key of a budget's settled spend, kept beside its counter (whose key is `key`) only while something asks
 * for it (budget alerts): the counter also holds the estimates reserved by requests still running, so it can
 * stand far above what was spent; this one grows only as requests settle, by their real usage.
 */
export function budgetSpentKey(key: string): string {
  return `${key}:spent`;
}

/** What settling adds to a budget's settled spend ({@linkcode budgetSpentKey}): its real usage; null for none. */
export function spentSettlement(
  reserved: OwnedBudgetCheck,
  actual: { tokens: number; cost: number },
): PeriodDelta | null {
  const raw = reserved.unit === "tokens" ? actual.tokens : actual.cost;
  if (!(Number.isFinite(raw) && raw > 0)) return null;
  const { key, period, expiresAt } = reserved.check;
  return {
    key: budgetSpentKey(key),
    period,
    amount: raw,
    expiresAt: expiresAt ?? reserved.period.end + PERIOD_GRACE_MS,
  };
}

/** A request's estimated cost as budgets count it. */
export interface BudgetEstimate {
  readonly tokens: number;
  readonly cost: number;
}

/** The check that reserves a request's estimate against the token's budget for the current period. */
export function budgetCheck(
  token: ResolvedToken,
  now: number,
  estimate: BudgetEstimate = { tokens: 0, cost: 0 },
): { check: PeriodCheck; period: BudgetPeriod } | null {
  const owner = tokenBudgetOwner(token);
  return owner ? ownerBudgetCheck(owner, now, estimate) : null;
}

/**
 * A budget's amount as the gateway's texts say it: a whole number (a token count) as it is, money to six
 * significant digits, so a sum of costs shows as 0.009, not as the double 0.009000000000000005 it adds up
 * to. The denial message and `/admin/explain`'s check say amounts alike.
 */
export function budgetAmount(n: number): string {
  return String(Number.isInteger(n) ? n : Number(n.toPrecision(6)));
}

/**
 * OpenAI's 429 `insufficient_quota` for an exhausted budget. `x-should-retry: false` stops the OpenAI SDKs
 * from retrying a request that cannot succeed before the period ends; the message says when that is, and its
 * `quota` tells Google's shape (lib/google_errors.ts) to say it as Google's clients read it.
 */
export function budgetDenied(
  token: ResolvedToken,
  result: CheckResult,
  period: BudgetPeriod,
  headers: Record<string, string>,
): PolicyDenied {
  return ownerBudgetDenied(tokenBudgetOwner(token)!, result, period, headers);
}

/** {@linkcode budgetDenied} for any budget's owner; the denial names `<scope>.budget`. */
export function ownerBudgetDenied(
  owner: BudgetOwner,
  result: CheckResult,
  period: BudgetPeriod,
  headers: Record<string, string>,
): PolicyDenied {
  const budget = owner.budget;
  const u = budgetUnit(budget)!;
  const what = u.unit === "tokens" ? `${budgetAmount(u.limit)} tokens` : `a cost of ${budgetAmount(u.limit)}`;
  const whose = owner.scope === "end_user" ? owner.name : `${owner.scope} ${owner.name}`;
  const message = `You exceeded your current quota: ${whose} has a budget of ${what} per ` +
    `${budget.period} (UTC) and has used ${budgetAmount(result.used)} in ${period.id}. ` +
    `The budget resets at ${new Date(period.end).toISOString()}.`;
  return new PolicyDenied(429, message, `${owner.scope}.budget`, {
    type: "insufficient_quota",
    code: "insufficient_quota",
    headers: { ...headers, "x-should-retry": "false" },
    // Google's clients learn it from the error's details (a QuotaFailure of the period, its reset).
    quota: { scope: owner.scope, unit: u.unit, limit: u.limit, period: budget.period, resetsAt: period.end },
  });
}

/**
 * What settling a request adds to its token's budget: its real usage minus what `reserved` (its admission's
 * check) reserved, to the counter of the period it was admitted in; with no reservation, its usage to the
 * period containing `now`. Null when nothing changes.
 */
export function budgetSettlement(
  token: ResolvedToken,
  actual: { tokens: number; cost: number },
  now: number,
  reserved?: PeriodCheck,
): PeriodDelta | null {
  if (!token.budget) return null;
  const u = budgetUnit(token.budget);
  if (!u) return null;
  const raw = u.unit === "tokens" ? actual.tokens : actual.cost;
  const used = Number.isFinite(raw) && raw > 0 ? raw : 0;
  if (reserved) {
    const amount = used - (reserved.amount ?? 0);
    if (amount === 0) return null;
    const expiresAt = reserved.expiresAt ?? now + PERIOD_GRACE_MS;
    return { key: reserved.key, period: reserved.period, amount, expiresAt };
  }
  if (used === 0) return null;
  const period = budgetPeriod(token.budget.period, now);
  return {
    key: budgetKey(token.id, u.unit),
    period: period.id,
    amount: used,
    expiresAt: period.end + PERIOD_GRACE_MS,
  };
}

/** Applies {@linkcode budgetSettlement} to `store`. */
export async function chargeBudget(
  store: CounterStore,
  token: ResolvedToken,
  actual: { tokens: number; cost: number },
  now: number,
  reserved?: PeriodCheck,
): Promise<void> {
  const d = budgetSettlement(token, actual, now, reserved);
  if (d) await store.periodAdd(d.key, d.period, d.amount, d.expiresAt);
}

/**
 * Seeds a token's budget counter for the current period from usage stored before this process started (the
 * server sums its usage records from `budgetPeriod(...).start`). Raises the counter to `used` and never
 * lowers it, so seeding twice, or after requests were already counted, does not double count.
 * Returns the counter's value afterwards (0 when the budget counts nothing).
 */
export async function seedBudget(
  store: CounterStore,
  tokenId: string,
  budget: BudgetConfig,
  used: { tokens: number; cost: number },
  now: number,
): Promise<number> {
  const u = budgetUnit(budget);
  if (!u) return 0;
  const period = budgetPeriod(budget.period, now);
  const value = u.unit === "tokens" ? used.tokens : used.cost;
  return await store.periodRaise(
    budgetKey(tokenId, u.unit),
    period.id,
    value,
    period.end + PERIOD_GRACE_MS,
  );
}

/**
 * {@linkcode seedBudget} for any budget's owner (a team: the sum of its members' stored usage). Raises and never
 * lowers, so it never double counts.
 */
export async function seedOwnerBudget(
  store: CounterStore,
  owner: BudgetOwner,
  used: { tokens: number; cost: number },
  now: number,
): Promise<number> {
  const owned = ownerBudgetCheck(owner, now);
  if (!owned) return 0;
  const value = owned.unit === "tokens" ? used.tokens : used.cost;
  return await store.periodRaise(owned.check.key, owned.check.period, value, owned.check.expiresAt!);
}
