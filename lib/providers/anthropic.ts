/**
 * Anthropic's Messages API (`POST {base_url}/v1/messages`) behind OpenAI's chat completions. This file is
 * the thin transport — URL, headers, status handling — around the pure translators:
 *
 * - `anthropic_request.ts`: OpenAI request → Anthropic request, and which parameters are unsupported;
 * - `anthropic_response.ts`: Anthropic message → `chat.completion`, usage, stop reasons, errors;
 * - `anthropic_stream.ts`: Anthropic SSE events → `chat.completion.chunk`s.
 *
 * @module
 */
import type { AnthropicProviderConfig } from "../config/schema.ts";
import { badGateway, invalidRequest } from "../errors.ts";
import { sseParseTransformer } from "../sse/parse.ts";
import { pullThrough } from "../streams/pull_through.ts";
import { anthropicUnsupportedRules, toAnthropicRequest, unknownParamRules } from "./anthropic_request.ts";
import { anthropicHttpError, toChatCompletion } from "./anthropic_response.ts";
import { anthropicChunkTransformer } from "./anthropic_stream.ts";
import { sendUpstream, upstreamLimits, type UpstreamResponse } from "./transport.ts";
import type { ChatResult, EmbeddingResult, Provider, UpstreamCall } from "./types.ts";
import type { ChatRequest, JsonObject } from "../openai/types.ts";
import { applyUnsupportedRules } from "./unsupported_params.ts";

/** The Messages endpoint for a configured `base_url` (the API root, without `/v1`). */
export function messagesUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/v1/messages`;
}

/**
 * Request headers: the operator's extra `headers` (e.g. `anthropic-beta`) first, then the ones the API
 * requires, which the extra headers cannot override by accident.
 */
export function anthropicHeaders(config: AnthropicProviderConfig, stream: boolean): Record<string, string> {
  return {
    ...config.headers,
    "x-api-key": config.api_key,
    "anthropic-version": config.anthropic_version,
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
  };
}

/**
 * The Anthropic body for a client request: unsupported parameters refused (or dropped with
 * `unsupported_params: drop`), then translated.
 */
export function buildAnthropicBody(
  config: AnthropicProviderConfig,
  request: ChatRequest,
  model: string,
): JsonObject {
  const rules = { ...anthropicUnsupportedRules, ...unknownParamRules(request) };
  const supported = applyUnsupportedRules(request, rules, config.unsupported_params, "Anthropic");
  return toAnthropicRequest(supported, { model, defaultMaxTokens: config.default_max_tokens });
}

async function failIfNotOk(secrets: readonly string[], provider: string, res: UpstreamResponse) {
  if (res.status >= 200 && res.status < 300) return;
  const text = await res.text().catch(() => "");
  throw anthropicHttpError(provider, res.status, text, res.headers, secrets);
}

/** Creates the provider for one `type: anthropic` config entry. */
export function createAnthropicProvider(config: AnthropicProviderConfig): Provider {
  const secrets: readonly string[] = [config.api_key];
  return {
    async chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult> {
      const provider = call.target.provider;
      const model = call.target.model;
      const stream = request.stream === true;
      const body = buildAnthropicBody(config, request, model);
      const res = await sendUpstream({
        url: messagesUrl(config.base_url),
        headers: anthropicHeaders(config, stream),
        body: JSON.stringify(body),
      }, call);
      await failIfNotOk(secrets, provider, res);
      if (!stream) {
        const text = await res.text();
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw badGateway(
            `Provider "${provider}" returned a body that is not JSON.`,
            "upstream_invalid_response",
          );
        }
        return { kind: "json", body: toChatCompletion(provider, json, model, Math.floor(Date.now() / 1000)) };
      }
      const chunks = pullThrough(
        res.body,
        sseParseTransformer({ maxEventBytes: upstreamLimits(call).maxEventBytes, provider }),
        anthropicChunkTransformer({ provider, model, secrets }),
      );
      return { kind: "stream", chunks };
    },

    embed(): Promise<EmbeddingResult> {
      return Promise.reject(
        invalidRequest(
          "Anthropic has no embeddings API; use an embedding model of another provider.",
          "model",
        ),
      );
    },
  };
}
