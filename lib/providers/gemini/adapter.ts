/**
 * Google Gemini (Generative Language API, v1beta) behind OpenAI's API. The translation lives in pure
 * modules (`request`, `response`, `stream`, `embeddings`, `error`); this file is the adapter the shared
 * skeleton (`../shared/skeleton.ts`) runs: URL (the model in the path), headers (the key in `x-goog-api-key`,
 * never in the URL, so it cannot leak through logged URLs), and wiring the answer through the translators.
 *
 * @module
 */
import type { GeminiProviderConfig } from "../../config/schema.ts";
import { invalidRequest } from "../../errors.ts";
import { stages } from "../../streams/pull_through.ts";
import {
  batchEmbedBody,
  embedContentBody,
  embeddingTexts,
  embedFieldsOf,
  GEMINI_MAX_BATCH,
  parseBatchEmbed,
  parseEmbedContent,
  readTexts,
} from "./embeddings.ts";
import { geminiHttpError, throwGeminiErrorBody } from "./error.ts";
import { geminiParamRules, toGeminiRequest } from "./request.ts";
import { toChatCompletion } from "./response.ts";
import { geminiChunkTransformer, geminiPassthroughTransformer } from "./stream.ts";
import { countTokensBody, geminiInputTokens } from "./count_tokens.ts";
import { count } from "./types.ts";
import type { UpstreamRequest } from "../shared/transport.ts";
import type { Provider } from "../types.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { applyUnsupportedRules } from "../shared/unsupported_params.ts";
import { parseJsonObject } from "../shared/json.ts";
import { keyHeader, type ProviderAdapter, providerFromAdapter, sseEvents } from "../shared/skeleton.ts";

/**
 * The resource name of a model: `gemini-2.5-flash` → `models/gemini-2.5-flash`; names that already have a
 * collection (`models/…`, `tunedModels/…`) are kept. Each segment is URL-encoded.
 */
export function modelPath(model: string): string {
  const path = /^(models|tunedModels)\//.test(model) ? model : `models/${model}`;
  return path.split("/").map(encodeURIComponent).join("/");
}

/** `{base_url}/models/{model}:{method}`, plus `?alt=sse` for streams. */
export function geminiUrl(baseUrl: string, model: string, method: string, sse = false): string {
  return `${baseUrl.replace(/\/+$/, "")}/${modelPath(model)}:${method}${sse ? "?alt=sse" : ""}`;
}

/** Request headers: the operator's extra headers, then JSON and the key (which the extras cannot override). */
export function geminiHeaders(config: GeminiProviderConfig, stream: boolean): Record<string, string> {
  return { ...unkeyedHeaders(config, stream), "x-goog-api-key": config.api_key };
}

/** {@linkcode geminiHeaders} before the authorize step adds the key; an extra named like the key is dropped. */
function unkeyedHeaders(config: GeminiProviderConfig, stream: boolean): Record<string, string> {
  const own: Record<string, string> = {
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
  };
  const extra = Object.entries(config.headers).filter(([name]) => {
    const lower = name.toLowerCase();
    return !(lower in own) && lower !== "x-goog-api-key";
  });
  return { ...Object.fromEntries(extra), ...own };
}

/** The adapter for one `type: gemini` config entry. */
export function geminiAdapter(config: GeminiProviderConfig): ProviderAdapter {
  const secrets: readonly string[] = [config.api_key];
  const post = (model: string, method: string, body: JsonObject, stream = false): UpstreamRequest => ({
    url: geminiUrl(config.base_url, model, method, stream),
    headers: unkeyedHeaders(config, stream),
    body: JSON.stringify(body),
  });

  /** Throws the upstream's error when a `generateContent` answer with a 200 is Google's error body. */
  const throwIfError = (json: JsonObject, provider: string) =>
    throwGeminiErrorBody(
      provider,
      json,
      json.candidates !== undefined || json.promptFeedback !== undefined,
      secrets,
    );

  /** The `GenerateContentRequest` for a chat request, unsupported parameters refused or dropped (`mode`). */
  const generateContentBody = (request: ChatRequest, stream: boolean, mode: "error" | "drop") =>
    toGeminiRequest(applyUnsupportedRules(request, geminiParamRules(stream), mode));

  return {
    chatRequest(request, call) {
      const stream = request.stream === true;
      const body = generateContentBody(request, stream, config.unsupported_params);
      return stream
        ? post(call.target.model, "streamGenerateContent", body, true)
        : post(call.target.model, "generateContent", body);
    },
    // A Gemini API request is counted as a Gemini target gets it, every part and `cachedContent` included; any
    // other is translated first, its unsupported parameters dropped, not refused: they do not change what the
    // input counts (the client API names them).
    countTokensRequest: (input, call) =>
      post(
        call.target.model,
        "countTokens",
        countTokensBody(input.gemini ?? generateContentBody(input.chat, false, "drop"), call.target.model),
      ),
    inputTokens: geminiInputTokens,
    // The Gemini API passed through: the client's body as it is, the target's model in the URL.
    geminiRequest: (body, stream, call) =>
      stream
        ? post(call.target.model, "streamGenerateContent", body, true)
        : post(call.target.model, "generateContent", body),
    geminiStages: (call) =>
      stages(sseEvents(call), geminiPassthroughTransformer(call.target.provider, secrets)),
    errorBody: (json, call) => throwIfError(json, call.target.provider),
    authorize: keyHeader("x-goog-api-key", config.api_key),
    httpError: (provider, status, text, headers) => geminiHttpError(provider, status, text, headers, secrets),
    completion: (text, call) => {
      const json = parseJsonObject(call.target.provider, text);
      throwIfError(json, call.target.provider);
      return toChatCompletion(json, { provider: call.target.provider, model: call.target.model });
    },
    streamStages: (call) =>
      stages(
        sseEvents(call),
        geminiChunkTransformer({ provider: call.target.provider, model: call.target.model, secrets }),
      ),

    async embed(request, call, send) {
      const provider = call.target.provider;
      const model = call.target.model;
      const texts = embeddingTexts(request);
      if (texts.length === 0) throw invalidRequest("`input` must not be empty.", "input");
      const dims = request.dimensions;
      const fields = embedFieldsOf(call.geminiFields, texts.length);
      const vectors: number[][] = [];
      let promptTokens = 0;
      if (texts.length === 1) {
        const { json: body } = await send(
          post(model, "embedContent", embedContentBody(texts[0], dims, fields[0])),
        );
        throwGeminiErrorBody(provider, body, body.embedding !== undefined, secrets);
        vectors.push(parseEmbedContent(provider, body));
        promptTokens += isObject(body.usageMetadata) ? count(body.usageMetadata, "promptTokenCount") : 0;
        call.onEmbedded?.({ texts: readTexts(texts, fields), tokens: promptTokens });
      } else {
        for (let start = 0; start < texts.length; start += GEMINI_MAX_BATCH) {
          const batch = texts.slice(start, start + GEMINI_MAX_BATCH);
          const own = fields.slice(start, start + GEMINI_MAX_BATCH);
          const { json: body } = await send(
            post(model, "batchEmbedContents", batchEmbedBody(modelPath(model), batch, dims, own)),
          );
          throwGeminiErrorBody(provider, body, body.embeddings !== undefined, secrets);
          vectors.push(...parseBatchEmbed(provider, body, batch.length));
          const tokens = isObject(body.usageMetadata) ? count(body.usageMetadata, "promptTokenCount") : 0;
          promptTokens += tokens;
          // Told at once: a later batch's failure leaves this one billed, and the request's record must say so.
          call.onEmbedded?.({ texts: readTexts(batch, own), tokens });
        }
      }
      // Gemini reports no token counts for embeddings (unless a future answer carries usageMetadata): 0. An
      // `outputDimensionality` gives a cut vector Google does not normalise (only the full size is: "for other
      // dimensions … you need to normalize", ai.google.dev/gemini-api/docs/embeddings); the full size asked by
      // name is unit already, and normalising it again changes nothing.
      return {
        data: vectors.map((embedding, index) => ({ index, embedding })),
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
        ...(dims === undefined ? {} : { unnormalized: true }),
      };
    },
  };
}

/** Creates the provider for one `type: gemini` config entry. */
export function createGeminiProvider(config: GeminiProviderConfig): Provider {
  return providerFromAdapter(geminiAdapter(config));
}
