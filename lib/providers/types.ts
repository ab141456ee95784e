/**
 * The contract every provider module fulfils. Providers speak OpenAI's wire shapes (`lib/openai/`) on this side
 * and their vendor's on the other; they never import the server, auth or routing.
 *
 * @module
 */
import type { ResolvedTarget } from "../config/types.ts";
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, EmbeddingRequest } from "../openai/types.ts";

/**
 * What a provider returns for embeddings. `embedding` may be floats or base64 (little-endian float32); the
 * server converts to whatever the client asked for.
 */
export interface EmbeddingResult {
  data: { index: number; embedding: number[] | string }[];
  usage: { prompt_tokens: number; total_tokens: number };
}

/** Everything a provider needs to make one upstream call. */
export interface UpstreamCall {
  readonly target: ResolvedTarget;
  /** Aborted when the client goes away; the provider must abort its upstream request then. */
  readonly signal: AbortSignal;
  readonly requestId: string;
}

/**
 * A chat answer: a whole completion, or a stream of chunks. The stream errors with a `GatewayError` when the
 * upstream fails mid-way, and cancelling it aborts the upstream request.
 */
export type ChatResult =
  | { readonly kind: "json"; readonly body: ChatCompletion }
  | { readonly kind: "stream"; readonly chunks: ReadableStream<ChatCompletionChunk> };

/** One upstream kind. Failures are thrown as `GatewayError` with OpenAI's status and shape. */
export interface Provider {
  chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult>;
  embed(request: EmbeddingRequest, call: UpstreamCall): Promise<EmbeddingResult>;
}
