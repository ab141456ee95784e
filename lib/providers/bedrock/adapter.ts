/**
 * AWS Bedrock: chat through Converse / ConverseStream, embeddings through InvokeModel (Titan, Cohere), every
 * request signed with SigV4 (service `bedrock`) using Web Crypto — no AWS SDK.
 *
 * Translation lives in `request.ts`, `response.ts`, `stream.ts` and `embeddings.ts`; the binary stream
 * framing in `eventstream.ts` (checksums in `crc32.ts`); signing in `sigv4.ts`; region, endpoint and
 * credentials (from the config entry or the standard AWS environment variables) in `settings.ts`. This module
 * is the adapter the shared skeleton (`../shared/skeleton.ts`) runs: it builds the requests, signs them as
 * its authorize step, and names the stream stages.
 *
 * @module
 */
import type { BedrockProviderConfig } from "../../config/schema.ts";
import { bedrockParamRules, toConverseRequest } from "./request.ts";
import { bedrockEmbed } from "./embeddings.ts";
import { bedrockHttpError, fromConverseResponse } from "./response.ts";
import { converseChunkTransformer } from "./stream.ts";
import { eventStreamTransformer } from "./eventstream.ts";
import { stages } from "../../streams/pull_through.ts";
import { signRequest } from "../../aws/sigv4.ts";
import { type BedrockAction, bedrockUrl, resolveBedrockSettings } from "./settings.ts";
import { bedrockInputTokens, countModelIds, countTokensBody } from "./count_tokens.ts";
import { countMessagesBody, invokeChunkTransformer, invokeMessagesBody, servesMessages } from "./messages.ts";
import { bedrockBetas } from "./betas.ts";
import { upstreamLimits, type UpstreamRequest } from "../shared/transport.ts";
import type { Provider, TokenCountInput, UpstreamCall } from "../types.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { parseJsonObject } from "../shared/json.ts";
import { type ProviderAdapter, providerFromAdapter } from "../shared/skeleton.ts";

/** Headers the signer sets; an operator's `headers` entry cannot replace them. */
const RESERVED_HEADERS = new Set([
  "host",
  "authorization",
  "content-type",
  "content-length",
  "x-amz-date",
  "x-amz-security-token",
  "x-amz-content-sha256",
]);

/** The adapter for one `type: bedrock` config entry; throws an `Error` if it cannot be set up. */
export function bedrockAdapter(
  config: BedrockProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): ProviderAdapter {
  const settings = resolveBedrockSettings(config, env);
  const { accessKeyId, secretAccessKey, sessionToken } = settings.credentials;
  const secrets: readonly string[] = [accessKeyId, secretAccessKey, ...(sessionToken ? [sessionToken] : [])];

  // Operator headers (a proxy's auth …) travel unsigned so a proxy may strip them without breaking SigV4;
  // `x-amz-*` ones must be signed (AWS requires it). Headers the signer owns cannot be overridden.
  const toSign: [string, string][] = [["content-type", "application/json"]];
  const unsigned: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.headers)) {
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) continue;
    if (lower.startsWith("x-amz-")) toSign.push([lower, value]);
    else unsigned[lower] = value;
  }

  /** The request for `action`; its own headers (`accept`) go on after the signed ones, unsigned. */
  const request = (
    model: string,
    action: BedrockAction,
    body: JsonObject,
  ): UpstreamRequest => ({
    url: bedrockUrl(settings.baseUrl, model, action),
    headers: action === "converse-stream" || action === "invoke-with-response-stream"
      ? {}
      : { accept: "application/json" },
    body: JSON.stringify(body),
  });

  /**
   * The Converse body for a chat request, unsupported parameters refused or dropped (`mode`); with the `model`,
   * Claude's reasoning settings too.
   */
  const converseBody = (chat: ChatRequest, mode: "error" | "drop", model = "") =>
    toConverseRequest(applyUnsupportedRules(chat, bedrockParamRules(model), mode), model);

  /** The betas of `anthropicBeta` (the client's header) and of the body's `anthropic_beta` that go to Bedrock. */
  const forwardedBetas = (body: JsonObject, anthropicBeta: string | null) =>
    bedrockBetas(config, anthropicBeta, body.anthropic_beta).forwarded;

  /**
   * The CountTokens request for `input`, sent to `model`. A Messages request to a Claude model is counted as it
   * would be invoked; anything else in its Converse form. Unsupported parameters are dropped, not refused: they
   * do not change what the input counts.
   */
  const countRequest = (input: TokenCountInput, call: UpstreamCall, model: string) =>
    request(
      model,
      "count-tokens",
      input.messages !== undefined && servesMessages(call.target.model)
        ? countMessagesBody(input.messages, forwardedBetas(input.messages, input.anthropicBeta ?? null))
        : countTokensBody(converseBody(input.chat, "drop", call.target.model)),
    );

  return {
    chatRequest(chat, call) {
      const body = converseBody(chat, config.unsupported_params, call.target.model);
      return request(call.target.model, chat.stream === true ? "converse-stream" : "converse", body);
    },
    // Claude models take a Messages request itself (InvokeModel); callers pass only those (`servesMessages`).
    // Only the betas the entry's list takes go along (the header's and the body's): Bedrock refuses the whole
    // request for any it does not take, and the operator's list is the operator's.
    messagesRequest: (body, call) =>
      request(
        call.target.model,
        body.stream === true ? "invoke-with-response-stream" : "invoke",
        invokeMessagesBody(body, forwardedBetas(body, call.anthropicBeta)),
      ),
    messagesStages: (call) =>
      stages(
        eventStreamTransformer({
          maxMessageBytes: upstreamLimits(call).maxEventBytes,
          provider: call.target.provider,
        }),
        invokeChunkTransformer(call.target.provider, secrets),
      ),
    // An inference profile is counted as its foundation model, then, after a 400, as the profile (`countModelIds`).
    countTokensRequest: (input, call) => countRequest(input, call, countModelIds(call.target.model)[0]),
    countTokensFallback(input, call) {
      const model = countModelIds(call.target.model)[1];
      return model === undefined ? null : countRequest(input, call, model);
    },
    inputTokens: bedrockInputTokens,
    async authorize(upstream) {
      const signed = await signRequest({
        method: "POST",
        url: upstream.url,
        headers: toSign,
        body: upstream.body ?? "",
        region: settings.region,
        service: "bedrock",
        credentials: settings.credentials,
      });
      return { ...upstream, headers: { ...unsigned, ...signed, ...upstream.headers } };
    },
    httpError: (provider, status, text, headers) =>
      bedrockHttpError(provider, status, headers, text, secrets),
    completion: (text, call) =>
      fromConverseResponse(
        call.target.provider,
        parseJsonObject(call.target.provider, text),
        call.target.model,
      ),
    streamStages: (call) =>
      stages(
        eventStreamTransformer({
          maxMessageBytes: upstreamLimits(call).maxEventBytes,
          provider: call.target.provider,
        }),
        converseChunkTransformer({ provider: call.target.provider, model: call.target.model, secrets }),
      ),
    embed: (embedding, call, send) =>
      bedrockEmbed(
        call.target.provider,
        call.target.model,
        embedding,
        (body) => send(request(call.target.model, "invoke", body)),
        call.onEmbedded,
      ),
  };
}

/** Creates the provider for one `type: bedrock` config entry; throws an `Error` if it cannot be set up. */
export function createBedrockProvider(
  config: BedrockProviderConfig,
  env: Readonly<Record<string, string | undefined>>,
): Provider {
  return providerFromAdapter(bedrockAdapter(config, env));
}
