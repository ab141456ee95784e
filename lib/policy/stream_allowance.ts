/**
 * `budget.stop_streams`: how much of its token's budget one admitted stream may use before the gateway ends
 * it. Read once, from the admission's own reservation, so that the stream's hot path never asks the counter
 * store again: the stream may use what it reserved plus what was left of the budget after that reservation
 * (the budget minus everything other requests had spent or reserved at that moment). Requests admitted
 * later reserve against what is left too, so on one replica or a fleet two streams can together overrun the
 * budget by at most what each was allowed beyond its own reservation; see docs/policies_and_usage.md,
 * "Stopping streams at the budget".
 *
 * "What it reserved" is what the store took, the amount its settlement corrects from too (engine.ts,
 * `takenAmounts`): the local limiter of `fail_open` caps a reservation at the replica's share, and allowing
 * the uncapped estimate instead would let a stream run past that share before it is cut.
 *
 * @module
 */
import type { ResolvedToken } from "../config/types.ts";
import { budgetUnit } from "./budgets.ts";
import type { CheckResult } from "./counter_store.ts";

/** What a stream of a token with `budget.stop_streams` may use, in the budget's unit. */
export interface StreamAllowance {
  readonly unit: "tokens" | "cost";
  /** The request's reservation (as taken) plus what was left of the budget when it was admitted. */
  readonly allowance: number;
}

/**
 * The allowance of an admitted request whose token budget check passed with `result` (its counter after the
 * reservation), having had `taken` reserved by the store; null when the token's budget does not stop streams.
 */
export function streamAllowance(
  token: ResolvedToken,
  taken: number | undefined,
  result: CheckResult | undefined,
): StreamAllowance | null {
  if (!token.budget?.stop_streams || taken === undefined || !result) return null;
  const u = budgetUnit(token.budget);
  if (!u) return null;
  return { unit: u.unit, allowance: taken + result.remaining };
}
