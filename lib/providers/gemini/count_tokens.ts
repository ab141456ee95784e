/**
 * Gemini's token counting (`POST {base_url}/models/{model}:countTokens`): the body wraps the whole
 * `GenerateContentRequest` the chat would send (system instruction, tools and generation config count too) as
 * `generateContentRequest`, which must then name its model; the answer's `totalTokens` is the count.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import { tokenCountField } from "../shared/token_count.ts";

/**
 * The counting body for a translated `GenerateContentRequest`. The model inside is the resource name
 * (`models/…`, or a `tunedModels/…` name as given), not URL-encoded: it is a field, not a path.
 */
export function countTokensBody(generateContent: JsonObject, model: string): JsonObject {
  const name = /^(models|tunedModels)\//.test(model) ? model : `models/${model}`;
  return { generateContentRequest: { model: name, ...generateContent } };
}

/**
 * The count in Gemini's answer. Proto3 JSON leaves out zero values, but a request always holds a message, so
 * an answer without `totalTokens` is not a count: a 502, for which the caller estimates instead.
 */
export function geminiInputTokens(json: JsonObject, provider: string): number {
  return tokenCountField(json, "totalTokens", provider);
}
