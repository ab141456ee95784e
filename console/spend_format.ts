/**
 * How the teams, alerts and explain views write a budget's spend, an alert and its deliveries, as one line
 * each. Pure functions (no DOM), unit-tested beside. An alert's fields come from the API as JSON of several
 * shapes (and hold names from requests and operators), so each is read defensively: a field of the wrong type
 * shows as "—" rather than breaking the row.
 *
 * @module
 */
import { formatCost, formatCount, formatPercent, formatTime, formatValue, NONE } from "./format.ts";
import type { Alert, AlertDelivery, ExplainBudget, Spend } from "./types.ts";

/** An amount in a budget's unit: tokens as a count, cost as money. */
function amount(unit: string, value: number | null | undefined): string {
  return unit === "cost" ? formatCost(value) : formatCount(value);
}

/** The unit after an amount: "tokens" or "cost" ("1,000 tokens", "25.00 cost", as the tokens view writes it). */
function unitWord(unit: string): string {
  return unit === "cost" ? "cost" : "tokens";
}

/** `used / limit`, 0 to 1 and beyond; NaN when unknown. */
export function spendRatio(spend: Pick<Spend, "used" | "limit">): number {
  return spend.used === null || !(spend.limit > 0) ? Number.NaN : spend.used / spend.limit;
}

/**
 * A budget's spend: "600 / 1,000 tokens (60%)", "12.50 / 25.00 cost (50%)"; counters that could not be read:
 * "— / 1,000 tokens (counters unavailable)".
 */
export function formatSpend(spend: Pick<Spend, "unit" | "used" | "limit">): string {
  const of = `${amount(spend.unit, spend.used)} / ${amount(spend.unit, spend.limit)} ${unitWord(spend.unit)}`;
  return spend.used === null ? `${of} (counters unavailable)` : `${of} (${formatPercent(spendRatio(spend))})`;
}

/** A budget period: "2026-11, resets 2026-12-01 00:00:00 UTC". */
export function formatPeriod(spend: Pick<Spend, "period_id" | "resets_at">): string {
  return `${spend.period_id}, resets ${formatTime(spend.resets_at)}`;
}

/**
 * A budget as explain shows it: "token.budget: 0.027 of 5.00 cost this day (4.97 left)", "team.budget: 600
 * of 1,000 tokens this month (400 left, stops streams)".
 */
export function formatBudgetUse(budget: ExplainBudget): string {
  const { unit } = budget;
  const streams = budget.stop_streams ? ", stops streams" : "";
  return `${budget.rule}: ${amount(unit, budget.used)} of ${amount(unit, budget.limit)} ${unitWord(unit)} ` +
    `this ${budget.period} (${amount(unit, budget.remaining)} left${streams})`;
}

/** A text field of an alert; anything else as short JSON ("—" when absent). */
function text(value: unknown): string {
  if (value === undefined || value === null) return NONE;
  return typeof value === "string" ? value : formatValue(value);
}

/** "1 attempt", "3 attempts". */
function plural(n: number, one: string, many = `${one}s`): string {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

const SCOPES: Record<string, string> = { token: "token", team: "team", end_user: "end user" };

/**
 * One line per alert, by type:
 * - budget: "token spender reached 80% of its budget (8,000 / 10,000 tokens, 2026-11)";
 * - denials: "token.rpm denied web-app more than 20 times within 5 minutes (from 2026-11-24 09:00:00 UTC)";
 * - ejection: "target flaky/always-fails ejected after 2 failures, until 2026-11-24 09:10:00 UTC";
 * - another type (from a newer gateway): its fields as JSON.
 */
export function alertSummary(alert: Alert): string {
  switch (alert.type) {
    case "budget": {
      const unit = text(alert.unit);
      const used = typeof alert.used === "number" ? alert.used : null;
      const limit = typeof alert.limit === "number" ? alert.limit : null;
      const period = alert.period !== null && typeof alert.period === "object"
        ? (alert.period as { id?: unknown }).id
        : undefined;
      const scope = typeof alert.scope === "string" ? (SCOPES[alert.scope] ?? alert.scope) : "budget";
      const threshold = typeof alert.threshold === "number" ? `${alert.threshold}%` : NONE;
      return `${scope} ${text(alert.name)} reached ${threshold} of its budget (` +
        `${amount(unit, used)} / ${amount(unit, limit)} ${unitWord(unit)}, ${text(period)})`;
    }
    case "denials": {
      const minutes = typeof alert.minutes === "number" ? plural(alert.minutes, "minute") : NONE;
      const times = typeof alert.count === "number" ? plural(alert.count, "time") : NONE;
      return `${text(alert.rule)} denied ${text(alert.owner)} more than ${times} within ${minutes} ` +
        `(from ${formatTime(typeof alert.window_start === "string" ? alert.window_start : null)})`;
    }
    case "ejection": {
      // The target is "provider/model": the provider is named again only when it is not already there.
      const target = text(alert.target);
      const provider = typeof alert.provider === "string" && !target.startsWith(`${alert.provider}/`)
        ? ` (${alert.provider})`
        : "";
      const failures = typeof alert.failures === "number" ? plural(alert.failures, "failure") : NONE;
      return `target ${target}${provider} ejected after ${failures}, until ` +
        formatTime(typeof alert.until === "string" ? alert.until : null);
    }
    default: {
      const { id: _id, type: _type, time: _time, ...fields } = alert;
      return JSON.stringify(fields);
    }
  }
}

/**
 * A delivery to one receiver (its index in `alerts:` and its host): "127.0.0.1:8080 (#0): delivered, 1
 * attempt", "hooks.example.com (#1): failed, 4 attempts (HTTP 500)".
 */
export function formatDelivery(d: AlertDelivery): string {
  const error = d.error ? ` (${d.error})` : "";
  return `${d.host} (#${d.target}): ${d.status}, ${plural(d.attempts, "attempt")}${error}`;
}
