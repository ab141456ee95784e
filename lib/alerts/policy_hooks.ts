/**
 * Where alerts attach to the policy engine: after a request's budgets settled (read each budget's settled
 * spend and let `budgetUsed` judge the thresholds) and at each denial by a counted limit (a budget's denial
 * also counts as its 100 %: `budgetDenied`). Thresholds are judged on the settled spend, never on the
 * budget's counter: that one also holds the estimates (prompt plus `max_tokens`) reserved by requests still
 * running, and would cross 80 % while 10 % is spent. Only the hooks some receiver asked for are returned, so
 * a gateway without budget alerts keeps no settled spend and never reads a counter back after settling.
 *
 * @module
 */
import type { AlertsConfig } from "../config/alerts_schema.ts";
import { budgetSpentKey, type OwnedBudgetCheck } from "../policy/budgets.ts";
import type { CounterStore } from "../policy/counter_store.ts";
import type { PolicyEngineOptions } from "../policy/engine.ts";
import type { BudgetSeeded } from "../policy/seed_budgets.ts";
import { type Alerts, budgetClaim, budgetClaimExpiry } from "./alerts.ts";

/** Whether any receiver asked for budget alerts: only then is a budget's settled spend kept. */
function budgetAlerts(config: AlertsConfig): boolean {
  return config.some((a) => (a.budget_thresholds?.length ?? 0) > 0);
}

/**
 * What budget alerts do as a budget is seeded from the usage store (at start, and when records reach it
 * later): raise the budget's settled spend to what was recorded, as its counter is raised, so that a restart
 * judges thresholds on the whole period's spend; and take the claims of the thresholds that this recorded
 * spend passed, since the run that spent it alerted them. Without Redis a claim lives in the process's memory
 * and dies with it, so without this each restart would post every threshold of the period again.
 *
 * Only spend this process's settled spend did not hold yet counts (the counter is below what was recorded):
 * on a replica joining a fleet whose shared spend is ahead, or after a reload, it holds it already, and its
 * thresholds are left to the claims made as they were crossed. Undefined without budget alerts.
 */
export function alertSeeding(
  config: AlertsConfig,
  counters: CounterStore,
  now: () => number = Date.now,
): BudgetSeeded | undefined {
  if (!budgetAlerts(config)) return undefined;
  const thresholds = [...new Set(config.flatMap((t) => t.budget_thresholds ?? []))];
  return async (b, used) => {
    if (!(used > 0)) return;
    const { key, period, limit, expiresAt } = b.check;
    const spent = budgetSpentKey(key);
    const before = await counters.periodGet(spent, period);
    if (before >= used) return;
    await counters.periodRaise(spent, period, used, expiresAt ?? b.period.end);
    for (const p of thresholds) {
      const at = (limit * p) / 100;
      if (before >= at || used < at) continue;
      const claim = budgetClaim(key, p, b.period.id);
      // Raised to 1, not added to: a claim already taken stays the one that was sent.
      await counters.periodRaise(claim.counter, claim.period, 1, budgetClaimExpiry(b.period.end, now()));
    }
  };
}

/** The engine options that feed `alerts`. */
export function alertHooks(
  alerts: Alerts,
  config: AlertsConfig,
  counters: CounterStore,
  onError: (err: unknown) => void,
): Pick<PolicyEngineOptions, "onBudgetSettled" | "onDenied" | "budgetCompanions"> {
  const hooks: Pick<PolicyEngineOptions, "onBudgetSettled" | "onDenied" | "budgetCompanions"> = {};
  if (budgetAlerts(config)) {
    const thresholds = [...new Set(config.flatMap((t) => t.budget_thresholds ?? []))];
    // A budget's claims go with its end user when `max_users` forgets it (the memory store; Redis keys expire
    // at the period's end), as its budget's counter does: a user that comes back starts its budget afresh.
    hooks.budgetCompanions = (budget) =>
      thresholds.map((p) => {
        const claim = budgetClaim(budget.key, p, budget.period);
        return { kind: "period", key: claim.counter, period: claim.period, limit: 0 };
      });
    hooks.onBudgetSettled = (budgets: readonly OwnedBudgetCheck[]) => {
      for (const b of budgets) {
        counters.periodGet(budgetSpentKey(b.check.key), b.check.period).then((used) =>
          alerts.budgetUsed({
            scope: b.owner.scope,
            name: b.owner.name,
            key: b.check.key,
            unit: b.unit,
            used,
            limit: b.check.limit,
            period: { id: b.period.id, end: b.period.end },
          })
        ).catch(onError);
      }
    };
  }
  const denials = config.some((a) => a.denials !== undefined);
  const budgets = budgetAlerts(config);
  if (denials || budgets) {
    hooks.onDenied = (denial, owner, { key, budget: b }) => {
      if (denials) alerts.denied({ rule: denial.rule, owner, key });
      // A budget that denies may never see its spend reach the limit: the denial is its 100 %.
      if (budgets && b) {
        alerts.budgetDenied({
          scope: b.owner.scope,
          name: b.owner.name,
          key: b.check.key,
          unit: b.unit,
          limit: b.check.limit,
          period: { id: b.period.id, end: b.period.end },
          spent: () => counters.periodGet(budgetSpentKey(b.check.key), b.check.period),
        });
      }
    };
  }
  return hooks;
}
