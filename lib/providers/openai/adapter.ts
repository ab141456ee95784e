/**
 * Any OpenAI-compatible upstream: OpenAI itself, vLLM, Ollama, llama.cpp, LM Studio, Groq, Together,
 * Mistral, DeepSeek, OpenRouter … The wire format is already OpenAI's, so translation is small: set the
 * upstream model, ask for stream usage, validate what comes back, normalise errors.
 *
 * @module
 */
import type { OpenAIProviderConfig } from "../../config/schema.ts";
import { PROVIDER_CAPABILITIES } from "../../config/provider_capabilities.ts";
import type { UpstreamRequest } from "../shared/transport.ts";
import type { EmbeddingResult, Provider, UpstreamCall } from "../types.ts";
import type { EmbeddingRequest } from "../../openai/types.ts";
import { upstreamHttpError } from "../shared/upstream_error.ts";
import { stages } from "../../streams/pull_through.ts";
import { parseJsonObject } from "../shared/json.ts";
import {
  keyHeader,
  type ProviderAdapter,
  providerFromAdapter,
  type SendJson,
  sseEvents,
} from "../shared/skeleton.ts";
import { toUpstreamChatBody, toUpstreamEmbeddingBody } from "./request.ts";
import { chatCompletionFrom, embeddingResultFrom, openAIErrorBody } from "./response.ts";
import { openAIChunkTransformer } from "./stream.ts";
import { nativeResponsesAdapter } from "./responses.ts";
import { moderationResultFrom, toUpstreamModerationBody } from "./moderations.ts";

/** Request headers without the key: operator extras first, then the ones the gateway sets. */
function requestHeaders(config: OpenAIProviderConfig, call: UpstreamCall, stream: boolean) {
  return {
    ...config.headers,
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "x-client-request-id": call.requestId,
  };
}

function endpoint(config: OpenAIProviderConfig, path: string): string {
  return config.base_url.replace(/\/+$/, "") + path;
}

/**
 * Embeddings from an OpenAI-shaped endpoint (OpenAI's own, Azure's): one call, in the client's encoding; the
 * upstream's error answered with a 200 is scrubbed of `secrets`.
 */
export async function openAIShapedEmbed(
  url: string,
  headers: Record<string, string>,
  request: EmbeddingRequest,
  call: UpstreamCall,
  send: SendJson,
  secrets: readonly string[],
): Promise<EmbeddingResult> {
  const { json } = await send({
    url,
    headers,
    body: JSON.stringify(toUpstreamEmbeddingBody(request, call.target.model)),
  });
  return embeddingResultFrom(call.target.provider, json, request, secrets);
}

/** The adapter for one `type: openai` config entry. */
export function openAIAdapter(config: OpenAIProviderConfig): ProviderAdapter {
  const secrets: readonly string[] = config.api_key ? [config.api_key] : [];
  const noKey = (request: UpstreamRequest) => request;
  const adapter: ProviderAdapter = {
    chatRequest: (request, call) => ({
      url: endpoint(config, "/chat/completions"),
      headers: requestHeaders(config, call, request.stream === true),
      body: JSON.stringify(toUpstreamChatBody(request, call.target.model, config)),
    }),
    authorize: config.api_key ? keyHeader("authorization", `Bearer ${config.api_key}`) : noKey,
    httpError: (provider, status, text, headers) =>
      upstreamHttpError(provider, status, text, headers, secrets),
    completion: (text, call) =>
      chatCompletionFrom(call.target.provider, parseJsonObject(call.target.provider, text), secrets),
    streamStages: (call) =>
      stages(
        sseEvents(call),
        openAIChunkTransformer(call.target.provider, secrets),
      ),
    errorBody: openAIErrorBody(secrets),
    embed: (request, call, send) =>
      openAIShapedEmbed(
        endpoint(config, "/embeddings"),
        requestHeaders(config, call, false),
        request,
        call,
        send,
        secrets,
      ),
    moderationRequest: (request, call) => ({
      url: endpoint(config, "/moderations"),
      headers: requestHeaders(config, call, false),
      body: JSON.stringify(toUpstreamModerationBody(request, call.target.model)),
    }),
    moderationResult: (json, provider) => moderationResultFrom(provider, json),
  };
  if (!config.native_responses) return adapter;
  // The upstream speaks the Responses API itself: passthrough and its token counting.
  const native = nativeResponsesAdapter(
    (path) => endpoint(config, `/${path}`),
    (call, stream) => requestHeaders(config, call, stream),
    secrets,
    PROVIDER_CAPABILITIES.openai.openaiBeta,
  );
  return { ...adapter, ...native };
}

/** Creates the provider for one `type: openai` config entry. */
export function createOpenAIProvider(config: OpenAIProviderConfig): Provider {
  return providerFromAdapter(openAIAdapter(config));
}
