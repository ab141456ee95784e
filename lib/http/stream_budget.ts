/**
 * The budget guard of one streamed answer (`budget.stop_streams`), built by every streaming handler from its
 * admission's allowance and the target that answers: tokens count 1 each against a token budget, and at the
 * answering target's input and output prices against a money budget. Undefined for every other token, so
 * their streams pay nothing for the feature.
 *
 * @module
 */
import type { ChatRequest } from "../openai/types.ts";
import { budgetPeriod } from "../policy/budgets.ts";
import { type BudgetGuard, createBudgetGuard } from "../streams/budget_guard.ts";
import { requestTexts, roughTokenEstimate } from "../usage/estimate.ts";
import type { ClientContext } from "./context.ts";

/** The guard of this request's stream, or undefined when its token's budget does not stop streams. */
export function streamBudgetGuard(ctx: ClientContext, chat: ChatRequest): BudgetGuard | undefined {
  const allowed = ctx.admission?.stream;
  const budget = ctx.identity.budget;
  if (!allowed || !budget) return undefined;
  const price = ctx.answeredBy?.price;
  const money = allowed.unit === "cost";
  const resets = new Date(budgetPeriod(budget.period, Date.now()).end).toISOString();
  return createBudgetGuard({
    allowance: allowed.allowance,
    promptTokens: roughTokenEstimate(requestTexts(chat)),
    inputWeight: money ? (price?.input ?? 0) / 1_000_000 : 1,
    outputWeight: money ? (price?.output ?? 0) / 1_000_000 : 1,
    message: `You exceeded your current quota: token ${ctx.identity.name} reached its budget per ` +
      `${budget.period} (UTC) during this answer, so the gateway stopped it. The budget resets at ${resets}.`,
  });
}
