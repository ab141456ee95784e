/**
 * Checks on OpenAI-shaped answers (OpenAI-compatible servers and Azure): what the gateway relies on must be
 * there; everything else passes on unchanged.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { type ChatCompletion, isObject, type JsonObject } from "../../openai/types.ts";
import type { EmbeddingResult } from "../types.ts";
import type { EmbeddingRequest } from "../../openai/types.ts";
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

/** How many vectors an embeddings request asks for: one per string or token array of its `input`. */
function inputCount(input: EmbeddingRequest["input"]): number {
  if (typeof input === "string" || input.length === 0 || typeof input[0] === "number") return 1;
  return input.length;
}

/** A vector as an upstream may send it: finite numbers, or base64 (which some servers send whatever is asked). */
function isVector(value: unknown): boolean {
  if (typeof value === "string") return true;
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const n of value) if (typeof n !== "number" || !Number.isFinite(n)) return false;
  return true;
}

/**
 * Validates an OpenAI-shaped embeddings answer to `request` and keeps what the server needs (vectors and
 * usage): one vector of numbers per input, indexed 0…n−1 each once, put in index order (a server that batches
 * may answer out of order). Anything else is the upstream's 502: never fewer vectors, or a vector of strings,
 * passed on as a 200.
 */
export function embeddingResultFrom(
  provider: string,
  body: JsonObject,
  request: EmbeddingRequest,
): EmbeddingResult {
  const data = body.data;
  const expected = inputCount(request.input);
  const valid = Array.isArray(data) && data.length === expected &&
    data.every((d) =>
      isObject(d) && Number.isInteger(d.index) && (d.index as number) >= 0 &&
      (d.index as number) < expected && isVector(d.embedding)
    ) && new Set(data.map((d) => (d as JsonObject).index)).size === expected;
  if (!valid) {
    throw badGateway(
      `Provider "${provider}" returned malformed embeddings.`,
      "upstream_invalid_response",
    );
  }
  const sorted = (data as EmbeddingResult["data"]).toSorted((a, b) => a.index - b.index);
  const usage = isObject(body.usage) ? body.usage : {};
  const prompt = isCount(usage.prompt_tokens) ? usage.prompt_tokens as number : 0;
  const total = isCount(usage.total_tokens) ? usage.total_tokens as number : prompt;
  return { data: sorted, usage: { prompt_tokens: prompt, total_tokens: total } };
}
