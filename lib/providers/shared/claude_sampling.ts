/**
 * Claude's sampling rules, for Anthropic's Messages API and Claude on Bedrock alike.
 *
 * - `temperature` is 0 to 1, where OpenAI's goes to 2. Anthropic refuses a temperature above 1 with a 400 (its
 *   own OpenAI compatibility layer caps it at 1 instead, which answers at a temperature the client did not ask
 *   for). So a temperature above 1 is a value Claude cannot honour, under the one rule for those
 *   (`./unsupported_params.ts`): checked before routing, so an alias's target that takes it (an
 *   OpenAI-compatible one) serves the request; refused by name when no target does; left out and named under
 *   `unsupported_params: drop`. Never clamped.
 * - `temperature` and `top_p` are one control: Claude Sonnet 4.5, Haiku 4.5, Opus 4.1 and every later model
 *   refuse both in one request ("`temperature` and `top_p` cannot both be specified for this model. Please use
 *   only one."; Bedrock says the same), and Anthropic's advice for every model is to alter one of them. Clients
 *   built for OpenAI or Gemini send both as a matter of course (Gemini CLI's defaults are `temperature: 1`,
 *   `topP: 0.95`, in every request). So beside a temperature `top_p` is always left out, and named
 *   ({@linkcode claudeSamplingDropped}), whatever the provider's `unsupported_params`: refusing it by default
 *   would fail every request of such a client on every Claude alias, for a setting the user never chose, while
 *   naming it in `x-gateway-dropped` keeps the change from being silent. Temperature is the one kept:
 *   Anthropic's API reference keeps `top_p` for advanced use and says temperature is usually all one needs.
 *   For every Claude model, not a list of the ones that refuse: a model id does not say its generation (an
 *   inference profile, an ARN, a proxy's own names), and a list would fail at the next model.
 * - `top_k` and thinking do not go together: Claude refuses any `top_k` with extended thinking on ("`top_k` must
 *   be unset when thinking is enabled"), on Anthropic's API and on Bedrock. When a request's
 *   `reasoning_effort` turns thinking on (`claudeThinkingAsked`), `top_k` is left out and named, whatever the
 *   mode and whatever client API it came from, and the thinking is honoured: thinking is what the client asked
 *   for, and it changes the answer far more than a cut of the token choices does, which Claude cannot apply
 *   while thinking anyway. Clients send `top_k` as a default of their own (Gemini CLI's `topK: 64` beside its
 *   `thinkingBudget` or `thinkingLevel`, in every request), so refusing the effort instead failed every request
 *   of such a client on a Claude alias. A `strict` alias still refuses the drop. (A forced tool, a temperature
 *   other than 1 or a `top_p` under 0.95 keep thinking off instead: `thinking_budget.ts`.)
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { claudeEffortReason, claudeThinkingAsked } from "./thinking_budget.ts";
import { CLAUDE_STOP_REASON } from "./claude_stop.ts";

/** The highest `temperature` Claude takes. */
export const CLAUDE_MAX_TEMPERATURE = 1;

/** For `applyUnsupportedRules`: a `temperature` above {@linkcode CLAUDE_MAX_TEMPERATURE}. */
export function claudeTemperatureUnsupported(value: unknown): boolean {
  return typeof value === "number" && value > CLAUDE_MAX_TEMPERATURE;
}

/**
 * The chat form's params a Claude target goes without for its sampling rules, beyond what `unsupported`
 * (`dropped`, the params the parameter rules already leave out) took: `top_p` beside a `temperature`, `top_k`
 * beside the thinking a `reasoning_effort` turns on. Empty when the request has neither pair.
 */
export function claudeSamplingDropped(request: JsonObject, dropped: readonly string[] = []): string[] {
  const sent = (param: string) => typeof request[param] === "number" && !dropped.includes(param);
  const out = sent("temperature") && sent("top_p") ? ["top_p"] : [];
  const thinks = !dropped.includes("reasoning_effort") && claudeThinkingAsked(request);
  if (request.top_k != null && !dropped.includes("top_k") && thinks) out.push("top_k");
  return out;
}

/**
 * For `ParamRules.reason` of the Claude vendors: a temperature is refused for its range; a `stop` for its blank
 * sequence (`./claude_stop.ts`); `reasoning_effort` for what it is beside (`claudeEffortReason`).
 */
export function claudeParamReason(param: string, request: JsonObject): string | null {
  if (param === "temperature") {
    return `above ${CLAUDE_MAX_TEMPERATURE} (Claude takes 0 to ${CLAUDE_MAX_TEMPERATURE})`;
  }
  if (param === "stop") return CLAUDE_STOP_REASON;
  return claudeEffortReason(param, request);
}
