/**
 * OpenAI's moderations endpoint (`POST {base}/moderations`, CreateModerationRequest / CreateModerationResponse in
 * OpenAI's OpenAPI description): the request is the client's with the target's model, and the answer is checked
 * for what the gateway passes on (an array of results, each with a boolean `flagged` and `categories` and
 * `category_scores` objects); everything else in a result reaches the client as sent. A 200 whose body is an
 * `{"error": …}` without `results` (OpenRouter's, LiteLLM's rate limit) never gets here: the adapter's `errorBody`
 * hook (`openAIErrorBody`, response.ts) throws it first as the upstream's error, a 429 in its words.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { ModerationRequest, ModerationResult } from "../types.ts";

/** The upstream body of a moderation request for the target's `model`. */
export function toUpstreamModerationBody(request: ModerationRequest, model: string): JsonObject {
  return { ...request, model };
}

/** Validates an OpenAI moderation answer; a 502 naming the provider for one the gateway cannot pass on. */
export function moderationResultFrom(provider: string, body: JsonObject): ModerationResult {
  const results = body.results;
  const valid = Array.isArray(results) && results.length > 0 &&
    results.every((r) =>
      isObject(r) && typeof r.flagged === "boolean" && isObject(r.categories) && isObject(r.category_scores)
    );
  if (!valid) {
    throw badGateway(
      `Provider "${provider}" returned a malformed moderation answer.`,
      "upstream_invalid_response",
    );
  }
  return { id: typeof body.id === "string" ? body.id : null, results: results as JsonObject[] };
}
