/**
 * What a money budget needs of the aliases it covers: a price on every target, or its requests would count 0
 * and the budget would never stop them. The one definition of "priced" for a resolved config, used where the
 * admin API checks a budget it is given, where a reload checks the budgets stored through it, and on the request
 * path as the last guard (`lib/http/accounting.ts`).
 *
 * @module
 */
import type { ResolvedModel, ResolvedToken } from "./types.ts";

/** Whether every target of `model` has a price (an unknown alias has none). */
export function isPriced(model: ResolvedModel | undefined): boolean {
  return model !== undefined && model.targets.length > 0 && model.targets.every((t) => t.price !== null);
}

/**
 * The money budgets that count a request of `token`, by the rule that names them in a denial: its own
 * (`token.budget`), its team's (`team.budget`), its end users' (`end_user.budget`). Empty: none counts money.
 */
export function moneyBudgetRules(token: ResolvedToken): string[] {
  const rules: string[] = [];
  if (token.budget?.cost !== undefined) rules.push("token.budget");
  if (token.team?.budget?.cost !== undefined) rules.push("team.budget");
  if (token.endUserLimits?.budget?.cost !== undefined) rules.push("end_user.budget");
  return rules;
}
