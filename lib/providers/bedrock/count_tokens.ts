/**
 * Bedrock's token counting (CountTokens, `POST /model/{modelId}/count-tokens`) for the Converse form: the
 * body is `{input: {converse: {messages, system, toolConfig, additionalModelRequestFields}}}` — the parts of the
 * Converse request that are input (inference settings are not) — and the answer is `{inputTokens}`. Only some models can count (AWS
 * answers others with a 400 ValidationException), so a failure here is routine and the caller estimates.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { tokenCountField } from "../shared/token_count.ts";

/** The Converse fields CountTokens takes. */
const COUNTED = ["messages", "system", "toolConfig", "additionalModelRequestFields"] as const;

/** The CountTokens body for a translated Converse request. */
export function countTokensBody(converse: JsonObject): JsonObject {
  const counted: JsonObject = {};
  for (const key of COUNTED) if (converse[key] !== undefined) counted[key] = converse[key];
  return { input: { converse: counted } };
}

/** The count in Bedrock's answer; a 502 for an answer without one. */
export function bedrockInputTokens(json: JsonObject, provider: string): number {
  return tokenCountField(json, "inputTokens", provider);
}
