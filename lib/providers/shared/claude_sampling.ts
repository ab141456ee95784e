/**
 * Claude's range for `temperature`, for Anthropic's Messages API and Claude on Bedrock alike: 0 to 1, where
 * OpenAI's goes to 2. Anthropic refuses a temperature above 1 with a 400 (its own OpenAI compatibility layer caps
 * it at 1 instead, which answers at a temperature the client did not ask for). So a temperature above 1 is a
 * value Claude cannot honour, under the one rule for those (`./unsupported_params.ts`): checked before routing,
 * so an alias's target that takes it (an OpenAI-compatible one) serves the request; refused by name when no
 * target does; left out and named under `unsupported_params: drop`. Never clamped.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { claudeEffortReason } from "./thinking_budget.ts";

/** The highest `temperature` Claude takes. */
export const CLAUDE_MAX_TEMPERATURE = 1;

/** For `applyUnsupportedRules`: a `temperature` above {@linkcode CLAUDE_MAX_TEMPERATURE}. */
export function claudeTemperatureUnsupported(value: unknown): boolean {
  return typeof value === "number" && value > CLAUDE_MAX_TEMPERATURE;
}

/**
 * For `ParamRules.reason` of the Claude vendors: a temperature is refused for its range; `reasoning_effort` for
 * what it is beside (`claudeEffortReason`).
 */
export function claudeParamReason(param: string, request: JsonObject): string | null {
  if (param === "temperature") {
    return `above ${CLAUDE_MAX_TEMPERATURE} (Claude takes 0 to ${CLAUDE_MAX_TEMPERATURE})`;
  }
  return claudeEffortReason(param, request);
}
