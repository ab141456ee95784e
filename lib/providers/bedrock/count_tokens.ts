/**
 * Bedrock's token counting (CountTokens, `POST /model/{modelId}/count-tokens`) for the Converse form: the
 * body is `{input: {converse: {messages, system, toolConfig, additionalModelRequestFields}}}` — the parts of the
 * Converse request that are input (inference settings are not) — and the answer is `{inputTokens}`. Only some models can count (AWS
 * answers others with a 400 ValidationException), so a failure here is routine and the caller estimates.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { tokenCountField } from "../shared/token_count.ts";

/** The Converse fields CountTokens takes. */
const COUNTED = ["messages", "system", "toolConfig", "additionalModelRequestFields"] as const;

/**
 * The CountTokens body for a translated Converse request. Claude's `top_k` is a sampling setting, not input:
 * it is left out of `additionalModelRequestFields` (its `thinking` stays: it is counted).
 */
export function countTokensBody(converse: JsonObject): JsonObject {
  const counted: JsonObject = {};
  for (const key of COUNTED) if (converse[key] !== undefined) counted[key] = converse[key];
  const additional = counted.additionalModelRequestFields;
  if (isObject(additional) && additional.top_k !== undefined) {
    const { top_k: _sampling, ...input } = additional;
    if (Object.keys(input).length > 0) counted.additionalModelRequestFields = input;
    else delete counted.additionalModelRequestFields;
  }
  return { input: { converse: counted } };
}

/** The count in Bedrock's answer; a 502 for an answer without one. */
export function bedrockInputTokens(json: JsonObject, provider: string): number {
  return tokenCountField(json, "inputTokens", provider);
}
