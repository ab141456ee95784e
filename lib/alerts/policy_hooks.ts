/**
 * Where alerts attach to the policy engine: after a request's budgets settled (read each budget's counter and
 * let `budgetUsed` judge the thresholds) and at each denial by a counted limit. Only the hooks some receiver
 * asked for are returned, so a gateway without budget alerts never reads a counter back after settling.
 *
 * @module
 */
import type { AlertsConfig } from "../config/alerts_schema.ts";
import type { OwnedBudgetCheck } from "../policy/budgets.ts";
import type { CounterStore } from "../policy/counter_store.ts";
import type { PolicyEngineOptions } from "../policy/engine.ts";
import type { Alerts } from "./alerts.ts";

/** The engine options that feed `alerts`. */
export function alertHooks(
  alerts: Alerts,
  config: AlertsConfig,
  counters: CounterStore,
  onError: (err: unknown) => void,
): Pick<PolicyEngineOptions, "onBudgetSettled" | "onDenied"> {
  const hooks: Pick<PolicyEngineOptions, "onBudgetSettled" | "onDenied"> = {};
  if (config.some((a) => (a.budget_thresholds?.length ?? 0) > 0)) {
    hooks.onBudgetSettled = (budgets: readonly OwnedBudgetCheck[]) => {
      for (const b of budgets) {
        counters.periodGet(b.check.key, b.check.period).then((used) =>
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
