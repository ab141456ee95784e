/**
 * The per-chunk check behind `budget.stop_streams`: a stream's usage so far (the prompt, plus the output
 * the client has been sent and is about to be sent), weighed in the budget's unit, against what the stream
 * may use (its admission's allowance, read once when it was admitted). Crossing it throws a
 * {@linkcode BudgetStop}, which the client body turns into the API's own error event; the body then cancels
 * the upstream. The check is a comparison per write (of the characters received): no counter-store call, no
 * tokenizer.
 *
 * Output is estimated from the text at about four characters per token (the ratio of
 * `roughTokenEstimate` in lib/usage/estimate.ts, without its per-message overhead, which would count every
 * delta as a message); the prompt is the gateway's estimate at admission. Against a money budget the tokens are
 * weighed at the rates settling charges (`ratesAt` in lib/pricing/cost.ts, the one rule): a long-context
 * tier's when the prompt's estimate is above its threshold, and reasoning text at a reasoning rate priced apart.
 * The weights are found once per stream, when it starts. The record of the stopped stream
 * is settled as every stream is (runner.ts): the upstream's usage when it reported some, else
 * counted with the tokenizer.
 *
 * @module
 */
import { GatewayError, type GatewayErrorInit, type QuotaReset } from "../errors.ts";
import type { ClientContext } from "../http/context.ts";
import { servedFromCache } from "../http/accounting.ts";
import type { ChatRequest } from "../openai/types.ts";
import { budgetPeriod, budgetUnit } from "../policy/budgets.ts";
import { ratesAt } from "../pricing/cost.ts";
import { promptTexts, roughTokenEstimate } from "../usage/estimate.ts";

/** The usage record's `error_code` of a stream the budget stopped (the client sees `insufficient_quota`). */
export const BUDGET_STOP_CODE = "budget_exceeded_mid_stream";

/**
 * The error a budget stop ends a stream with: OpenAI's `insufficient_quota` (429, as the denial of the next
 * request says; on the Messages API `rate_limit_error`, as that denial is too).
 */
export class BudgetStop extends GatewayError {
  constructor(message: string, quota: QuotaReset | null = null) {
    super(429, message, { type: "insufficient_quota", code: "insufficient_quota", quota });
  }

  /** Masked (`scrubError`: the message names the token), still the budget's stop. */
  override remade(message: string, init: GatewayErrorInit): BudgetStop {
    return new BudgetStop(message, init.quota ?? null);
  }
}

/** A stream's error code for its usage record: {@linkcode BUDGET_STOP_CODE} for a budget stop. */
export function streamErrorCode(error: GatewayError | undefined): string {
  if (error instanceof BudgetStop) return BUDGET_STOP_CODE;
  return error?.code ?? "stream_error";
}

/** What {@linkcode createBudgetGuard} needs; weights turn tokens into the budget's unit. */
export interface BudgetGuardOptions {
  /** What the stream may use, in the budget's unit. */
  allowance: number;
  /** The prompt's tokens as the gateway estimated them at admission. */
  promptTokens: number;
  /** The budget's unit per prompt token and per output token: 1 and 1 for a token budget, prices for money. */
  inputWeight: number;
  outputWeight: number;
  /** Per token of reasoning text, where it is priced apart from output; default `outputWeight`. */
  reasoningWeight?: number;
  /** The client's message when the stream is stopped. */
  message: string;
  /** The budget, for the error shapes that say when it resets (Google's). */
  quota?: QuotaReset;
}

/** One stream's check; keeps the characters it last weighed. */
export interface BudgetGuard {
  /**
   * Weighs what the client has received so far (`chars`: the characters of the outcome's texts, which only
   * grow; `reasoningChars`: those of them that are reasoning) and throws a {@linkcode BudgetStop} when the
   * stream's usage would cross its allowance.
   */
  check(received: { readonly chars: number; readonly reasoningChars?: number }): void;
  /** Output tokens counted so far (an estimate). */
  readonly outputTokens: number;
}

const EPSILON = 1e-9;

/** A money budget's rates for a target without a price: it costs nothing, as settling charges it nothing. */
const NO_RATES = { input: 0, output: 0, reasoning: 0 } as const;

export function createBudgetGuard(options: BudgetGuardOptions): BudgetGuard {
  const fixed = Math.max(0, options.promptTokens) * options.inputWeight;
  const reasoningWeight = options.reasoningWeight ?? options.outputWeight;
  let seen = 0;
  let outputTokens = 0;
  return {
    check({ chars, reasoningChars = 0 }) {
      // Reasoning characters are among `chars`: when those did not grow, neither did they.
      if (chars === seen) return;
      seen = chars;
      const reasoning = Math.ceil(reasoningChars / 4);
      const said = Math.ceil((chars - reasoningChars) / 4);
      outputTokens = said + reasoning;
      if (fixed + said * options.outputWeight + reasoning * reasoningWeight > options.allowance + EPSILON) {
        throw new BudgetStop(options.message, options.quota);
      }
    },
    get outputTokens() {
      return outputTokens;
    },
  };
}

/**
 * The budget guard of this request's stream (`budget.stop_streams`), from its admission's allowance and the
 * target that answers: tokens count 1 each against a token budget, and against a money budget at the answering
 * target's rates for a prompt of this size, as settling picks them (`ratesAt`: the long-context tier's above its
 * threshold; reasoning's own rate where it has one). Undefined for every other token, so their streams pay
 * nothing for it, and for a response-cache hit, which spends nothing of any budget (docs/caching.md): it is
 * replayed whole.
 */
export function streamBudgetGuard(ctx: ClientContext, chat: ChatRequest): BudgetGuard | undefined {
  const allowed = ctx.admission?.stream;
  const budget = ctx.identity.budget;
  if (!allowed || !budget) return undefined;
  if (servedFromCache(ctx.record)) return undefined;
  const price = ctx.answeredBy?.price;
  const promptTokens = roughTokenEstimate(promptTexts(chat));
  // Per million tokens; found once here, so each chunk's check is a few multiplications.
  const rates = allowed.unit === "cost" ? (price ? ratesAt(price, promptTokens) : NO_RATES) : undefined;
  const period = budgetPeriod(budget.period, Date.now());
  const resets = new Date(period.end).toISOString();
  const unit = budgetUnit(budget);
  return createBudgetGuard({
    allowance: allowed.allowance,
    promptTokens,
    inputWeight: rates ? rates.input / 1_000_000 : 1,
    outputWeight: rates ? rates.output / 1_000_000 : 1,
    reasoningWeight: rates ? rates.reasoning / 1_000_000 : 1,
    message: `You exceeded your current quota: token ${ctx.identity.name} reached its budget per ` +
      `${budget.period} (UTC) during this answer, so the gateway stopped it. The budget resets at ${resets}.`,
    quota: unit === null
      ? undefined
      : { scope: "token", ...unit, period: budget.period, resetsAt: period.end },
  });
}
