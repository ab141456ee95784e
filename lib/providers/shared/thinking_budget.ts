/**
 * OpenAI's `reasoning_effort` as Claude's extended thinking (`thinking: {type: "enabled", budget_tokens}`), one
 * rule for Anthropic's API and for Claude on Bedrock (`additionalModelRequestFields.thinking`).
 *
 * OpenAI's `max_completion_tokens` bounds reasoning and answer together, and so does Claude's `max_tokens`
 * (thinking counts against it), so a client's limit is kept as it is and the budget fits under it. Without a
 * client limit, the gateway's default answer allowance gets the budget on top, so asking for more thinking
 * does not shrink the answer.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";

/**
 * Thinking budgets per effort, in tokens. `minimal` is Claude's smallest budget (1,024); `low`, `medium` and
 * `high` double from there and then follow Google's published budgets for the same efforts (8,192 and 24,576),
 * so an effort costs about the same thinking on either vendor; `high` plus a 4,096-token answer stays under the
 * 32,000-token output limit of the smallest thinking Claude (Opus 4). `none` means no thinking: Claude's
 * default, so nothing is sent.
 */
export const CLAUDE_THINKING_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 24576,
};

/** Claude's smallest accepted `budget_tokens`. */
export const CLAUDE_MIN_BUDGET = 1024;

/** For `applyUnsupportedRules`: an effort this mapping does not know (`none` and the budget table are known). */
export function claudeEffortUnsupported(effort: unknown): boolean {
  return effort !== "none" && !(typeof effort === "string" && Object.hasOwn(CLAUDE_THINKING_BUDGETS, effort));
}

/** What to send for an effort: the thinking budget and the `max_tokens` that goes with it. */
export interface ClaudeThinking {
  budgetTokens: number;
  maxTokens: number;
}

/**
 * The thinking settings for `effort` (already checked with {@linkcode claudeEffortUnsupported}), or `null` when
 * nothing is to be sent (`none`, or no effort). `clientMax` is the client's `max_completion_tokens` /
 * `max_tokens` (named by `maxParam`), `defaultAnswer` the answer allowance used when the client set none. A
 * client limit that leaves no room for Claude's smallest budget is a 400 naming that limit.
 */
export function claudeThinking(
  effort: unknown,
  clientMax: number | undefined,
  maxParam: string,
  defaultAnswer: number,
): ClaudeThinking | null {
  if (typeof effort !== "string" || !Object.hasOwn(CLAUDE_THINKING_BUDGETS, effort)) return null;
  const budget = CLAUDE_THINKING_BUDGETS[effort];
  if (clientMax === undefined) return { budgetTokens: budget, maxTokens: defaultAnswer + budget };
  if (clientMax <= CLAUDE_MIN_BUDGET) {
    throw invalidRequest(
      `'${maxParam}' must be above ${CLAUDE_MIN_BUDGET} with 'reasoning_effort' on Claude models: thinking ` +
        `counts against it and takes at least ${CLAUDE_MIN_BUDGET} tokens.`,
      maxParam,
    );
  }
  return { budgetTokens: Math.min(budget, clientMax - 1), maxTokens: clientMax };
}
