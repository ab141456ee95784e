/**
 * The OpenAI-shaped bodies sent upstream (OpenAI-compatible servers and Azure): the client's own, with the
 * upstream model.
 *
 * @module
 */
import type { OpenAIProviderConfig } from "../../config/schema.ts";
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../../openai/types.ts";
import { withReasoningHistory } from "./reasoning_history.ts";

/** What of a provider's entry shapes its chat bodies (`type: openai` and `type: azure` both have it). */
export type ChatBodyConfig = Pick<OpenAIProviderConfig, "stream_usage" | "reasoning_history">;

/**
 * The chat body sent upstream: the client's body with the upstream model, plus usage on streams
 * (`stream_usage`), and the history's reasoning in the name the upstream takes, or left out
 * (`reasoning_history`: `reasoning_history.ts`).
 */
export function toUpstreamChatBody(request: ChatRequest, model: string, config: ChatBodyConfig): JsonObject {
  const messages = withReasoningHistory(request.messages, config.reasoning_history);
  const body: JsonObject = { ...request, model, messages };
  if (request.stream === true && config.stream_usage) {
    body.stream_options = { ...(request.stream_options ?? {}), include_usage: true };
  }
  return body;
}

/**
 * The embeddings body sent upstream, in the client's encoding. Base64 because a base64 answer is well under half
 * the size of float JSON, so a large batch (1000 inputs × 3072 dimensions: 16 MB against 38 MB) stays within
 * `upstream_limits.max_body_size`, and every server the openai SDKs talk to takes it (they ask for it by
 * default); one that answers floats anyway is converted. A float client (or one naming none) gets floats asked
 * for, so its numbers are the upstream's own as printed (decoding base64 would give each float32's longer
 * float64 spelling instead, `0.05000000074505806` for `0.05`).
 */
export function toUpstreamEmbeddingBody(request: EmbeddingRequest, model: string): JsonObject {
  return { ...request, model, encoding_format: request.encoding_format === "base64" ? "base64" : "float" };
}
