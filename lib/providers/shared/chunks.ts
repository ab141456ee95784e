/**
 * Builders for OpenAI response objects, shared by the vendor translators so that every vendor's answer has
 * exactly the fields the openai SDKs (and their strict stream helpers) require.
 *
 * @module
 */
import type { ChatCompletionChunk, JsonObject, Usage } from "../../openai/types.ts";
import { randomHex } from "../../encoding/random_hex.ts";

/** A fresh `chatcmpl-…` id for vendors whose ids are not OpenAI-shaped. */
export function newCompletionId(): string {
  return `chatcmpl-${randomHex(12)}`;
}

/** A fresh `call_…` id for vendors that give tool calls none (Gemini). */
export function newToolCallId(): string {
  return `call_${randomHex(12)}`;
}

/** Identity shared by every chunk of one streamed completion. */
export interface ChunkIdentity {
  id: string;
  created: number;
  model: string;
}

/** One `chat.completion.chunk` with a single choice. */
export function makeChunk(
  identity: ChunkIdentity,
  delta: JsonObject,
  finishReason: string | null = null,
): ChatCompletionChunk {
  return {
    id: identity.id,
    object: "chat.completion.chunk",
    created: identity.created,
    model: identity.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/**
 * The usage-only chunk (`choices: []`) OpenAI sends last when `include_usage` is set. Vendor streams always
 * emit it when they know usage; the server removes it unless the client asked for it.
 */
export function makeUsageChunk(identity: ChunkIdentity, usage: Usage): ChatCompletionChunk {
  return {
    id: identity.id,
    object: "chat.completion.chunk",
    created: identity.created,
    model: identity.model,
    choices: [],
    usage,
  };
}

/**
 * OpenAI `CompletionUsage` from prompt and completion counts, with optional cached-token detail and, for vendors
 * that charge for writing their prompt cache (Anthropic, Bedrock), the gateway's own details of the tokens
 * written (`cache_write_5m_tokens`, `cache_write_1h_tokens`: within `prompt_tokens`, priced apart by
 * lib/pricing/cost.ts).
 */
export function makeUsage(
  prompt: number,
  completion: number,
  cachedPrompt?: number,
  cacheWrites?: { fiveMinutes: number; oneHour: number },
): Usage {
  const usage: Usage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  const details: Record<string, number> = {};
  if (cachedPrompt !== undefined) details.cached_tokens = cachedPrompt;
  if (cacheWrites !== undefined && cacheWrites.fiveMinutes + cacheWrites.oneHour > 0) {
    details.cache_write_5m_tokens = cacheWrites.fiveMinutes;
    details.cache_write_1h_tokens = cacheWrites.oneHour;
  }
  if (Object.keys(details).length > 0) usage.prompt_tokens_details = details;
  return usage;
}
