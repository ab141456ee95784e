/**
 * OpenAI's `reasoning_effort` as Claude's extended thinking (`thinking: {type: "enabled", budget_tokens}`, or on
 * Claude 4.7 and later `thinking: {type: "adaptive"}` with `output_config: {effort}`), one rule for Anthropic's
 * API and for Claude on Bedrock (`additionalModelRequestFields.thinking` / `.output_config`).
 *
 * OpenAI's `max_completion_tokens` bounds reasoning and answer together, and so does Claude's `max_tokens`
 * (thinking counts against it), so a client's limit is kept as it is and the budget fits under it. Without a
 * client limit, the gateway's default answer allowance gets the budget on top, so asking for more thinking
 * does not shrink the answer.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { jsonAnswerChoice } from "./json_answer_tool.ts";
import { claudeHistoryLeavesThinkingOff } from "./claude_history.ts";

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

/** Claude's smallest `top_p` beside thinking. */
const THINKING_MIN_TOP_P = 0.95;

/**
 * What Claude refuses beside (manual) extended thinking, in Anthropic's extended-thinking docs ("feature
 * compatibility"), for the Messages API and for Claude on Bedrock alike, that keeps thinking off: a
 * `tool_choice` that forces a tool (`"required"`, a named function), a `temperature` other than 1, a `top_p`
 * under 0.95 (unless a temperature is sent too, which leaves `top_p` out). The first such parameter of a chat request, or null. Claude refuses any `top_k` beside thinking
 * too, but that one goes instead ({@linkcode claudeThinkingAsked}, `./claude_sampling.ts`).
 */
export function thinkingExcludedBy(request: JsonObject): string | null {
  const choice = request.tool_choice;
  if (choice === "required" || (isObject(choice) && choice.type === "function")) return "tool_choice";
  if (typeof request.temperature === "number" && request.temperature !== 1) return "temperature";
  // Beside a temperature Claude gets no top_p at all (`./claude_sampling.ts` leaves it out), so it excludes
  // nothing then: the parameters are judged as they will be sent.
  const topPSent = typeof request.top_p === "number" && typeof request.temperature !== "number";
  if (topPSent && Number(request.top_p) < THINKING_MIN_TOP_P) return "top_p";
  return null;
}

/**
 * Whether the translations turn Claude's thinking on for this chat request: an effort they map (not `none`),
 * not left off ({@linkcode thinkingLeftOff}), and nothing beside it that keeps it off
 * ({@linkcode thinkingExcludedBy}). A `top_k` is then left out (`./claude_sampling.ts`).
 */
export function claudeThinkingAsked(request: JsonObject): boolean {
  const effort = request.reasoning_effort;
  if (effort === "none" || typeof effort !== "string" || !Object.hasOwn(CLAUDE_THINKING_BUDGETS, effort)) {
    return false;
  }
  return !thinkingLeftOff(request) && thinkingExcludedBy(request) === null;
}

/**
 * Whether the translations leave thinking off for this request whatever its effort: when the history does, as
 * its turns are sent (`./claude_history.ts`: a tool loop under way, or a final assistant turn, a prefill, each
 * of which Claude would want begun with a signed thinking block), and when a JSON `response_format` is served by
 * forcing the answer tool (`./json_answer_tool.ts`), since the format is what the client cannot do without.
 * Both are documented in docs/providers.md.
 */
function thinkingLeftOff(request: JsonObject): boolean {
  if (claudeHistoryLeavesThinkingOff(Array.isArray(request.messages) ? request.messages : [])) return true;
  const format = request.response_format;
  if (!isObject(format) || (format.type !== "json_object" && format.type !== "json_schema")) return false;
  const tools = Array.isArray(request.tools) && request.tools.length > 0;
  return jsonAnswerChoice(request.tool_choice, tools) !== "client";
}

/**
 * For `applyUnsupportedRules`: an effort this mapping does not know (`none` and the budget table are known), or
 * one that would turn thinking on beside what thinking excludes ({@linkcode thinkingExcludedBy}): Claude would
 * refuse the request, and it is `reasoning_effort` that goes (named as dropped, or refused), since the forced
 * tool, the temperature and the `top_p` are what the client asked of the answer itself. Not beside a `top_k`,
 * which goes instead (`./claude_sampling.ts`).
 */
export function claudeEffortUnsupported(effort: unknown, request?: JsonObject): boolean {
  if (effort === "none") return false;
  if (!(typeof effort === "string" && Object.hasOwn(CLAUDE_THINKING_BUDGETS, effort))) return true;
  return request !== undefined && !thinkingLeftOff(request) && thinkingExcludedBy(request) !== null;
}

/**
 * For `ParamRules.reason`: why `reasoning_effort` is refused when its value is fine (see
 * {@linkcode claudeEffortUnsupported}), or null.
 */
export function claudeEffortReason(param: string, request: JsonObject): string | null {
  if (param !== "reasoning_effort" || claudeEffortUnsupported(request.reasoning_effort)) return null;
  const beside = thinkingExcludedBy(request);
  if (beside === null) return null;
  const what = beside === "tool_choice"
    ? "a 'tool_choice' that forces a tool"
    : beside === "top_p"
    ? `'top_p' below ${THINKING_MIN_TOP_P}`
    : "a 'temperature' other than 1";
  return `beside ${what} (Claude cannot think then)`;
}

/**
 * Whether `model` (an Anthropic model id, or a Bedrock model id / inference profile such as
 * `us.anthropic.claude-opus-4-7-v1:0`) takes only adaptive thinking. Anthropic's extended-thinking docs: "Claude
 * 4.7 and later models do not support it [`thinking.type: "enabled"` with `budget_tokens`] and reject requests
 * that use it, returning a 400 error"; Bedrock's adaptive-thinking page says the same of Claude Mythos Preview.
 * The one rule: a Claude model whose version (the number after the family name, `claude-opus-4-7`, or before
 * it in older ids, `claude-3-7-sonnet`) is 4.7 or later, or Claude Mythos. A date after the major version
 * (`claude-opus-4-20250514`) is not a minor version.
 */
export function claudeAdaptiveOnly(model: string): boolean {
  if (/(?:^|[./:-])claude-mythos(?:$|[-:@.])/i.test(model)) return true;
  const version = /(?:^|[./:-])claude-(?:[a-z]+-)?(\d+)(?:[-.](\d{1,2}))?(?=$|[-:@.])/i.exec(model);
  if (version === null) return false;
  const major = Number(version[1]);
  const minor = version[2] === undefined ? 0 : Number(version[2]);
  return major > 4 || (major === 4 && minor >= 7);
}

/**
 * `output_config.effort` per `reasoning_effort` for adaptive thinking. Anthropic's levels are `low`, `medium`,
 * `high` (its default) and `max` (not on every model), so OpenAI's `minimal` is the lowest there is, `low`.
 */
const CLAUDE_ADAPTIVE_EFFORTS: Readonly<Record<string, string>> = {
  minimal: "low",
  low: "low",
  medium: "medium",
  high: "high",
};

/**
 * What to send for an effort: the `thinking` field, the `output_config` beside it (adaptive thinking only), and
 * the `max_tokens` that goes with them.
 */
export interface ClaudeThinking {
  thinking: JsonObject;
  outputConfig?: JsonObject;
  maxTokens: number;
}

/**
 * The thinking settings for `effort` (already checked with {@linkcode claudeEffortUnsupported}) on `model`, or
 * `null` when nothing is to be sent (`none`, or no effort). `clientMax` is the client's
 * `max_completion_tokens` / `max_tokens` (named by `maxParam`), `defaultAnswer` the answer allowance used when
 * the client set none. Manual thinking (`budget_tokens`): a client limit that leaves no room for Claude's
 * smallest budget is a 400 naming that limit. Adaptive thinking ({@linkcode claudeAdaptiveOnly}) has no budget
 * to fit, so a client limit is sent as it is; without one the effort's budget is still added to the default
 * allowance, since thinking counts against `max_tokens` there too.
 */
export function claudeThinking(
  effort: unknown,
  clientMax: number | undefined,
  maxParam: string,
  defaultAnswer: number,
  model: string,
): ClaudeThinking | null {
  if (typeof effort !== "string" || !Object.hasOwn(CLAUDE_THINKING_BUDGETS, effort)) return null;
  const budget = CLAUDE_THINKING_BUDGETS[effort];
  if (claudeAdaptiveOnly(model)) {
    return {
      thinking: { type: "adaptive" },
      outputConfig: { effort: CLAUDE_ADAPTIVE_EFFORTS[effort] },
      maxTokens: clientMax ?? defaultAnswer + budget,
    };
  }
  const manual = (budgetTokens: number) => ({ type: "enabled", budget_tokens: budgetTokens });
  if (clientMax === undefined) return { thinking: manual(budget), maxTokens: defaultAnswer + budget };
  if (clientMax <= CLAUDE_MIN_BUDGET) {
    throw invalidRequest(
      `'${maxParam}' must be above ${CLAUDE_MIN_BUDGET} with 'reasoning_effort' on Claude models: thinking ` +
        `counts against it and takes at least ${CLAUDE_MIN_BUDGET} tokens.`,
      maxParam,
    );
  }
  return { thinking: manual(Math.min(budget, clientMax - 1)), maxTokens: clientMax };
}
