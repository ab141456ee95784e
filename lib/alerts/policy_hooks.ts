/**
 * Where alerts attach to the policy engine: after a request's budgets settled (read each budget's settled
 * spend and let `budgetUsed` judge the thresholds) and at each denial by a counted limit. Thresholds are
 * judged on the settled spend, never on the budget's counter: that one also holds the estimates (prompt plus
 * `max_tokens`) reserved by requests still running, and would cross 80 % while 10 % is spent. Only the hooks
 * some receiver asked for are returned, so a gateway without budget alerts keeps no settled spend and never
 * reads a counter back after settling.
 *
 * @module
 */
import type { AlertsConfig } from "../config/alerts_schema.ts";
import { budgetSpentKey, type OwnedBudgetCheck } from "../policy/budgets.ts";
import type { CounterStore } from "../policy/counter_store.ts";
import type { PolicyEngineOptions } from "../policy/engine.ts";
import type { BudgetSeeded } from "../policy/seed_budgets.ts";
import type { Alerts } from "./alerts.ts";

/** Whether any receiver asked for budget alerts: only then is a budget's settled spend kept. */
function budgetAlerts(config: AlertsConfig): boolean {
  return config.some((a) => (a.budget_thresholds?.length ?? 0) > 0);
}

/**
 * What budget alerts do as a budget is seeded from the usage store (at start, and when records reach it
 * later): raise the budget's settled spend to what was recorded, as its counter is raised, so that a restart
 * judges thresholds on the whole period's spend. Undefined without budget alerts: nothing to keep.
 */
export function alertSeeding(config: AlertsConfig, counters: CounterStore): BudgetSeeded | undefined {
  if (!budgetAlerts(config)) return undefined;
  return async (b, used) => {
    if (!(used > 0)) return;
    const { key, period, expiresAt } = b.check;
    await counters.periodRaise(budgetSpentKey(key), period, used, expiresAt ?? b.period.end);
  };
}

/** The engine options that feed `alerts`. */
export function alertHooks(
  alerts: Alerts,
  config: AlertsConfig,
  counters: CounterStore,
  onError: (err: unknown) => void,
): Pick<PolicyEngineOptions, "onBudgetSettled" | "onDenied"> {
  const hooks: Pick<PolicyEngineOptions, "onBudgetSettled" | "onDenied"> = {};
  if (budgetAlerts(config)) {
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
  if (config.some((a) => a.denials !== undefined)) {
    hooks.onDenied = (denial, owner) => alerts.denied({ rule: denial.rule, owner });
  }
  return hooks;
}
