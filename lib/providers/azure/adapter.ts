/**
 * Azure OpenAI. The wire format is OpenAI's, so this module reuses the OpenAI-compatible pieces and adds only
 * what Azure does differently:
 *
 * - Addressing (`addressing.ts`). Classic form (`api_version` set): `{base_url}/openai/deployments/{deployment}/{op}?api-version=…`.
 *   v1 form (`base_url` ends in `/openai/v1`): `{base_url}/{op}`, with the deployment as the body's `model`.
 *   In both forms the target's `model` is the deployment name and the key goes in the `api-key` header.
 * - Content-filter annotations. `prompt_filter_results` and per-choice `content_filter_results` pass through
 *   unchanged. In streams Azure sends annotation-only chunks OpenAI never sends: a first chunk with empty
 *   `choices` (prompt annotations) and, with the asynchronous filter, chunks with an empty `id`, no `delta`,
 *   sometimes after the finish. `stream.ts` folds the first into the next real chunk and gives
 *   the others the stream's identity and an empty delta, so every chunk a client sees is OpenAI-shaped.
 * - Errors. Azure's `{"error":{"code":"429",…}}` numeric-string codes and the content filter's `innererror`
 *   are normalised by `error.ts` before the shared `upstreamHttpError` decides the status.
 *
 * @module
 */
import type { AzureProviderConfig } from "../../config/schema.ts";
import { PROVIDER_CAPABILITIES } from "../../config/provider_capabilities.ts";
import { openAIShapedEmbed } from "../openai/adapter.ts";
import { toUpstreamChatBody } from "../openai/request.ts";
import { chatCompletionFrom, openAIErrorBody } from "../openai/response.ts";
import { openAIChunkTransformer } from "../openai/stream.ts";
import type { Provider } from "../types.ts";
import { upstreamHttpError } from "../shared/upstream_error.ts";
import { stages } from "../../streams/pull_through.ts";
import { parseJsonObject } from "../shared/json.ts";
import { keyHeader, type ProviderAdapter, providerFromAdapter, sseEvents } from "../shared/skeleton.ts";
import { azureAddressing, azureResponsesUrl, azureUrl } from "./addressing.ts";
import { nativeResponsesAdapter } from "../openai/responses.ts";
import { azureErrorFields } from "./error.ts";
import { azureChunkTransformer } from "./stream.ts";

/** Request headers: operator extras first, so that they cannot replace the key, content type or accept. */
export function azureHeaders(
  config: Pick<AzureProviderConfig, "api_key" | "headers">,
  requestId: string,
  stream: boolean,
): Record<string, string> {
  return { ...unkeyedHeaders(config, requestId, stream), "api-key": config.api_key };
}

/** {@linkcode azureHeaders} before the authorize step adds the key. */
function unkeyedHeaders(
  config: Pick<AzureProviderConfig, "headers">,
  requestId: string,
  stream: boolean,
): Record<string, string> {
  return {
    ...config.headers,
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "x-client-request-id": requestId,
  };
}
/** The adapter for one `type: azure` config entry; throws a plain `Error` for unusable addressing. */
export function azureAdapter(config: AzureProviderConfig): ProviderAdapter {
  const addressing = azureAddressing(config.base_url, config.api_version);
  const secrets: readonly string[] = [config.api_key];
  const adapter: ProviderAdapter = {
    chatRequest: (request, call) => ({
      url: azureUrl(addressing, call.target.model, "chat/completions"),
      headers: unkeyedHeaders(config, call.requestId, request.stream === true),
      // Classic Azure ignores `model` (the path picks the deployment); v1 needs it. Sent in both forms.
      body: JSON.stringify(toUpstreamChatBody(request, call.target.model, config)),
    }),
    authorize: keyHeader("api-key", config.api_key),
    httpError: (provider, status, text, headers) =>
      upstreamHttpError(provider, status, azureErrorFields(status, text), headers, secrets),
    completion: (text, call) =>
      chatCompletionFrom(call.target.provider, parseJsonObject(call.target.provider, text), secrets),
    streamStages: (call) =>
      stages(
        sseEvents(call),
        openAIChunkTransformer(call.target.provider, secrets),
        azureChunkTransformer(),
      ),
    errorBody: openAIErrorBody(secrets),
    embed: (request, call, send) =>
      openAIShapedEmbed(
        azureUrl(addressing, call.target.model, "embeddings"),
        unkeyedHeaders(config, call.requestId, false),
        request,
        call,
        send,
        secrets,
      ),
  };
  if (!config.native_responses) return adapter;
  // The resource's Responses API: the client's body passed through, the deployment as its `model`.
  const native = nativeResponsesAdapter(
    (path) => azureResponsesUrl(addressing, path),
    (call, stream) => unkeyedHeaders(config, call.requestId, stream),
    secrets,
    PROVIDER_CAPABILITIES.azure.openaiBeta,
  );
  return { ...adapter, ...native };
}

/**
 * Creates the provider for one `type: azure` config entry. Throws a plain `Error` when the entry names no
 * usable addressing form, so `check` and `serve` report it as a config issue rather than failing requests.
 */
export function createAzureProvider(config: AzureProviderConfig): Provider {
  return providerFromAdapter(azureAdapter(config));
}
