/**
 * The OpenAI-shaped bodies sent upstream (OpenAI-compatible servers and Azure): the client's own, with the
 * upstream model.
 *
 * @module
 */
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../../openai/types.ts";

/** The chat body sent upstream: the client's body with the upstream model, plus usage on streams. */
export function toUpstreamChatBody(request: ChatRequest, model: string, streamUsage: boolean): JsonObject {
  const body: JsonObject = { ...request, model };
  if (request.stream === true && streamUsage) {
    body.stream_options = { ...(request.stream_options ?? {}), include_usage: true };
  }
  return body;
}

/** The embeddings body sent upstream; floats are requested because every compatible server supports them. */
export function toUpstreamEmbeddingBody(request: EmbeddingRequest, model: string): JsonObject {
  return { ...request, model, encoding_format: "float" };
}
