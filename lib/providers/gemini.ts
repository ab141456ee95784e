/**
 * Google Gemini (Generative Language API, v1beta) behind OpenAI's API. The translation lives in pure
 * modules (`gemini_request`, `gemini_response`, `gemini_stream`, `gemini_embeddings`, `gemini_error`); this
 * file is the thin transport: URL (the model in the path), headers (the key in `x-goog-api-key`, never in the
 * URL, so it cannot leak through logged URLs), and wiring the answer through the translators.
 *
 * @module
 */
import type { GeminiProviderConfig } from "../config/schema.ts";
import { badGateway, invalidRequest } from "../errors.ts";
import { sseParseTransformer } from "../sse/parse.ts";
import { pullThrough } from "../streams/pull_through.ts";
import {
  batchEmbedBody,
  embedContentBody,
  embeddingTexts,
  GEMINI_MAX_BATCH,
  parseBatchEmbed,
  parseEmbedContent,
} from "./gemini_embeddings.ts";
import { geminiHttpError } from "./gemini_error.ts";
import { geminiUnsupportedRules, toGeminiRequest } from "./gemini_request.ts";
import { toChatCompletion } from "./gemini_response.ts";
import { geminiChunkTransformer } from "./gemini_stream.ts";
import { count, isObject } from "./gemini_types.ts";
import { sendUpstream, upstreamLimits, type UpstreamResponse } from "./transport.ts";
import type { ChatResult, EmbeddingResult, Provider, UpstreamCall } from "./types.ts";
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";
import { applyUnsupportedRules } from "./unsupported_params.ts";

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
  const own: Record<string, string> = {
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "x-goog-api-key": config.api_key,
  };
  const extra = Object.entries(config.headers).filter(([name]) => !(name.toLowerCase() in own));
  return { ...Object.fromEntries(extra), ...own };
}

async function failIfNotOk(secrets: readonly string[], provider: string, res: UpstreamResponse) {
  if (res.status >= 200 && res.status < 300) return;
  const text = await res.text().catch(() => "");
  throw geminiHttpError(provider, res.status, text, res.headers, secrets);
}

async function readJson(provider: string, res: UpstreamResponse): Promise<JsonObject> {
  const text = await res.text();
  try {
    const json: unknown = JSON.parse(text);
    if (isObject(json)) return json;
  } catch { /* reported below */ }
  throw badGateway(
    `Provider "${provider}" returned a body that is not a JSON object.`,
    "upstream_invalid_response",
  );
}

/** Creates the provider for one `type: gemini` config entry. */
export function createGeminiProvider(config: GeminiProviderConfig): Provider {
  const secrets: readonly string[] = [config.api_key];
  const post = async (call: UpstreamCall, method: string, body: JsonObject, stream = false) => {
    const res = await sendUpstream({
      url: geminiUrl(config.base_url, call.target.model, method, stream),
      headers: geminiHeaders(config, stream),
      body: JSON.stringify(body),
    }, call);
    await failIfNotOk(secrets, call.target.provider, res);
    return res;
  };

  return {
    async chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult> {
      const provider = call.target.provider;
      const stream = request.stream === true;
      const checked = applyUnsupportedRules(
        request,
        geminiUnsupportedRules(stream),
        config.unsupported_params,
        "Gemini",
      );
      const body = toGeminiRequest(checked);
      if (!stream) {
        const res = await post(call, "generateContent", body);
        const completion = toChatCompletion(await readJson(provider, res), {
          provider,
          model: call.target.model,
        });
        return { kind: "json", body: completion };
      }
      const res = await post(call, "streamGenerateContent", body, true);
      const chunks = pullThrough(
        res.body,
        sseParseTransformer({ maxEventBytes: upstreamLimits(call).maxEventBytes, provider }),
        geminiChunkTransformer({ provider, model: call.target.model, secrets }),
      );
      return { kind: "stream", chunks };
    },

    async embed(request: EmbeddingRequest, call: UpstreamCall): Promise<EmbeddingResult> {
      const provider = call.target.provider;
      const texts = embeddingTexts(request);
      if (texts.length === 0) throw invalidRequest("`input` must not be empty.", "input");
      const dims = request.dimensions;
      const vectors: number[][] = [];
      let promptTokens = 0;
      if (texts.length === 1) {
        const res = await post(
          call,
          "embedContent",
          embedContentBody(texts[0], dims),
        );
        const body = await readJson(provider, res);
        vectors.push(parseEmbedContent(provider, body));
        promptTokens += isObject(body.usageMetadata) ? count(body.usageMetadata, "promptTokenCount") : 0;
      } else {
        for (let start = 0; start < texts.length; start += GEMINI_MAX_BATCH) {
          const batch = texts.slice(start, start + GEMINI_MAX_BATCH);
          const res = await post(
            call,
            "batchEmbedContents",
            batchEmbedBody(modelPath(call.target.model), batch, dims),
          );
          const body = await readJson(provider, res);
          vectors.push(...parseBatchEmbed(provider, body, batch.length));
          promptTokens += isObject(body.usageMetadata) ? count(body.usageMetadata, "promptTokenCount") : 0;
        }
      }
      // Gemini reports no token counts for embeddings (unless a future answer carries usageMetadata): 0.
      return {
        data: vectors.map((embedding, index) => ({ index, embedding })),
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      };
    },
  };
}
