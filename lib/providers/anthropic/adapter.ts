/**
 * Anthropic's Messages API (`POST {base_url}/v1/messages`) behind OpenAI's chat completions. This file is
 * the adapter the shared skeleton (`../shared/skeleton.ts`) runs — URL, headers, key — around the pure
 * translators:
 *
 * - `request.ts`: OpenAI request → Anthropic request, and which parameters are unsupported;
 * - `response.ts`: Anthropic message → `chat.completion`, usage, stop reasons, errors;
 * - `stream.ts`: Anthropic SSE events → `chat.completion.chunk`s.
 *
 * @module
 */
import type { AnthropicProviderConfig } from "../../config/schema.ts";
import { badGateway, invalidRequest } from "../../errors.ts";
import { stages } from "../../streams/pull_through.ts";
import { ANTHROPIC_PARAM_RULES, toAnthropicRequest } from "./request.ts";
import { anthropicHttpError, throwAnthropicErrorBody, toChatCompletion } from "./response.ts";
import { anthropicChunkTransformer } from "./stream.ts";
import { anthropicInputTokens, countTokensBody, countTokensUrl } from "./count_tokens.ts";
import { anthropicEventTransformer, nativeMessagesHeaders } from "./native.ts";
import type { Provider } from "../types.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { keyHeader, type ProviderAdapter, providerFromAdapter, sseEvents } from "../shared/skeleton.ts";

/** The Messages endpoint for a configured `base_url` (the API root, without `/v1`). */
export function messagesUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/v1/messages`;
}

/**
 * Request headers: the operator's extra `headers` (e.g. `anthropic-beta`) first, then the ones the API
 * requires, which the extra headers cannot override by accident.
 */
export function anthropicHeaders(config: AnthropicProviderConfig, stream: boolean): Record<string, string> {
  return { ...unkeyedHeaders(config, stream), "x-api-key": config.api_key };
}

/** {@linkcode anthropicHeaders} before the authorize step adds the key. */
function unkeyedHeaders(config: AnthropicProviderConfig, stream: boolean): Record<string, string> {
  return {
    ...config.headers,
    "anthropic-version": config.anthropic_version,
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
  };
}

/**
 * The Anthropic body for a client request: unsupported parameters refused (or dropped with
 * `unsupported_params: drop`, or `mode` "drop" where they cannot change the answer, as for a token count),
 * then translated.
 */
export function buildAnthropicBody(
  config: AnthropicProviderConfig,
  request: ChatRequest,
  model: string,
  mode: "error" | "drop" = config.unsupported_params,
): JsonObject {
  const supported = applyUnsupportedRules(request, ANTHROPIC_PARAM_RULES, mode);
  return toAnthropicRequest(supported, { model, defaultMaxTokens: config.default_max_tokens });
}

/**
 * Parses a whole answer; Anthropic's error body in its place is the upstream's error (`secrets` scrubbed), and
 * what is not a message is reported by `toChatCompletion`.
 */
function parseJson(provider: string, text: string, secrets: readonly string[]): unknown {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badGateway(
      `Provider "${provider}" returned a body that is not JSON.`,
      "upstream_invalid_response",
    );
  }
  throwAnthropicErrorBody(provider, json, secrets);
  return json;
}

/** The adapter for one `type: anthropic` config entry. */
export function anthropicAdapter(config: AnthropicProviderConfig): ProviderAdapter {
  const secrets: readonly string[] = [config.api_key];
  return {
    chatRequest: (request, call) => ({
      url: messagesUrl(config.base_url),
      headers: unkeyedHeaders(config, request.stream === true),
      body: JSON.stringify(buildAnthropicBody(config, request, call.target.model)),
    }),
    authorize: keyHeader("x-api-key", config.api_key),
    httpError: (provider, status, text, headers) =>
      anthropicHttpError(provider, status, text, headers, secrets),
    completion: (text, call) =>
      toChatCompletion(
        call.target.provider,
        parseJson(call.target.provider, text, secrets),
        call.target.model,
        Math.floor(Date.now() / 1000),
      ),
    streamStages: (call) =>
      stages(
        sseEvents(call),
        anthropicChunkTransformer({ provider: call.target.provider, model: call.target.model, secrets }),
      ),
    // A Messages request is passed through as the client sent it (model rewritten, betas forwarded).
    messagesRequest: (body, call) => ({
      url: messagesUrl(config.base_url),
      headers: nativeMessagesHeaders(config, call, body.stream === true),
      body: JSON.stringify(body),
    }),
    messagesStages: (call) =>
      stages(sseEvents(call), anthropicEventTransformer(call.target.provider, secrets)),
    errorBody: (json, call) => throwAnthropicErrorBody(call.target.provider, json, secrets),
    // A Messages request is counted as sent, exactly; another is translated first. Unsupported parameters are
    // dropped, not refused: they do not change what the input counts.
    countTokensRequest: (input, call) => ({
      url: countTokensUrl(config.base_url),
      headers: input.messages === undefined ? unkeyedHeaders(config, false) : nativeMessagesHeaders(
        config,
        {
          ...call,
          anthropicVersion: input.anthropicVersion ?? null,
          anthropicBeta: input.anthropicBeta ?? null,
        },
        false,
      ),
      body: JSON.stringify(
        countTokensBody(
          input.messages === undefined
            ? buildAnthropicBody(config, input.chat, call.target.model, "drop")
            : { ...input.messages, model: call.target.model },
        ),
      ),
    }),
    inputTokens: anthropicInputTokens,
    embed: () =>
      Promise.reject(
        invalidRequest(
          "Anthropic has no embeddings API; use an embedding model of another provider.",
          "model",
        ),
      ),
  };
}

/** Creates the provider for one `type: anthropic` config entry. */
export function createAnthropicProvider(config: AnthropicProviderConfig): Provider {
  return providerFromAdapter(anthropicAdapter(config));
}
