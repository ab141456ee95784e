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
 * Validates an OpenAI-shaped non-stream completion: it must have `choices`, each an object with a `message`
 * object (what every client API reads); the rest passes on, with a message's `reasoning` as
 * `reasoning_content` (see `reasoning.ts`), and `usage` dropped when its counts are not counts (see
 * {@linkcode withTrustedUsage}).
 */
export function chatCompletionFrom(provider: string, body: JsonObject): ChatCompletion {
  const choices = body.choices;
  if (!Array.isArray(choices) || !choices.every((c) => isObject(c) && isObject(c.message))) {
    throw badGateway(
      `Provider "${provider}" returned a completion without valid choices.`,
      "upstream_invalid_response",
    );
  }
  for (const choice of choices as JsonObject[]) {
    const message = choice.message as JsonObject;
    if (needsReasoningFix(message)) normalizeReasoning(message);
  }
  return withTrustedUsage(body) as unknown as ChatCompletion;
}

/**
 * `value` without its `usage` when the token counts in it are not non-negative whole numbers (a string, a
 * negative count): such usage would be recorded as sent and priced as nothing, so the gateway counts the
 * tokens itself instead, as for an upstream that reports no usage.
 */
export function withTrustedUsage(value: JsonObject): JsonObject {
  const usage = value.usage;
  if (usage === undefined || usage === null) return value;
  if (isObject(usage) && isCount(usage.prompt_tokens) && isCount(usage.completion_tokens)) return value;
  delete value.usage;
  return value;
}

function isCount(value: unknown): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
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
