/**
 * Checks on OpenAI-shaped answers (OpenAI-compatible servers and Azure): what the gateway relies on must be
 * there; everything else passes on unchanged.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { type ChatCompletion, isObject, type JsonObject } from "../../openai/types.ts";
import type { EmbeddingResult } from "../types.ts";
import { needsReasoningFix, normalizeReasoning } from "./reasoning.ts";

/**
 * Validates an OpenAI-shaped non-stream completion: it must at least have `choices`; the rest passes on, with a
 * message's `reasoning` as `reasoning_content` (see `reasoning.ts`).
 */
export function chatCompletionFrom(provider: string, body: JsonObject): ChatCompletion {
  if (!Array.isArray(body.choices)) {
    throw badGateway(
      `Provider "${provider}" returned a completion without choices.`,
      "upstream_invalid_response",
    );
  }
  for (const choice of body.choices) {
    const message = isObject(choice) ? choice.message : undefined;
    if (isObject(message) && needsReasoningFix(message)) normalizeReasoning(message);
  }
  return body as ChatCompletion;
}

/** Validates an OpenAI-shaped embeddings answer and keeps what the server needs (vectors and usage). */
export function embeddingResultFrom(provider: string, body: JsonObject): EmbeddingResult {
  const data = body.data;
  const valid = Array.isArray(data) && data.every((d) =>
    isObject(d) && typeof d.index === "number" &&
    (Array.isArray(d.embedding) || typeof d.embedding === "string")
  );
  if (!valid) {
    throw badGateway(
      `Provider "${provider}" returned malformed embeddings.`,
      "upstream_invalid_response",
    );
  }
  const usage = isObject(body.usage) ? body.usage : {};
  const prompt = typeof usage.prompt_tokens === "number" ? usage.prompt_tokens : 0;
  const total = typeof usage.total_tokens === "number" ? usage.total_tokens : prompt;
  return { data: data as EmbeddingResult["data"], usage: { prompt_tokens: prompt, total_tokens: total } };
}
