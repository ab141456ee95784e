/**
 * Azure OpenAI. The wire format is OpenAI's, so this module reuses the OpenAI-compatible pieces and adds only
 * what Azure does differently:
 *
 * - Addressing. Classic form (`api_version` set): `{base_url}/openai/deployments/{deployment}/{op}?api-version=…`.
 *   v1 form (`base_url` ends in `/openai/v1`): `{base_url}/{op}`, with the deployment as the body's `model`.
 *   In both forms the target's `model` is the deployment name and the key goes in the `api-key` header.
 * - Content-filter annotations. `prompt_filter_results` and per-choice `content_filter_results` pass through
 *   unchanged. In streams Azure sends annotation-only chunks OpenAI never sends: a first chunk with empty
 *   `choices` (prompt annotations) and, with the asynchronous filter, chunks with an empty `id`, no `delta`,
 *   sometimes after the finish. {@linkcode AzureChunkStream} folds the first into the next real chunk and gives
 *   the others the stream's identity and an empty delta, so every chunk a client sees is OpenAI-shaped.
 * - Errors. Azure's `{"error":{"code":"429",…}}` numeric-string codes and the content filter's `innererror`
 *   are normalised by {@linkcode azureErrorFields} before the shared `upstreamHttpError` decides the status.
 *
 * @module
 */
import type { AzureProviderConfig } from "../config/schema.ts";
import {
  chatCompletionFrom,
  embeddingResultFrom,
  openAIChunkTransformer,
  readUpstreamJson,
  toUpstreamChatBody,
  toUpstreamEmbeddingBody,
} from "./openai.ts";
import { sseParseTransformer } from "../sse/parse.ts";
import { sendUpstream, upstreamLimits, type UpstreamResponse } from "./transport.ts";
import type { ChatResult, EmbeddingResult, Provider, UpstreamCall } from "./types.ts";
import type { ChatCompletionChunk, ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";
import { type ParsedUpstreamError, parseUpstreamErrorBody, upstreamHttpError } from "./upstream_error.ts";
import { pullThrough, type SyncTransformer } from "../streams/pull_through.ts";

/** The two ways of addressing an Azure OpenAI resource. */
export type AzureForm = "classic" | "v1";

/** The operations the gateway calls, as URL path suffixes. */
export type AzureOperation = "chat/completions" | "embeddings";

/** How one `type: azure` provider addresses its resource, derived once from config. */
export interface AzureAddressing {
  form: AzureForm;
  /** `base_url` without trailing slashes (and, in the classic form, without a trailing `/openai`). */
  root: string;
  /** Sent as `?api-version=`: required in the classic form, optional (e.g. `preview`) in the v1 form. */
  apiVersion?: string;
}

const V1_SUFFIX = /\/openai\/v1$/;

/**
 * Decides the addressing form from `base_url` and `api_version`. Throws a plain `Error` (reported as a config
 * issue for this provider) when neither form applies, or when `base_url` already names a deployment, a
 * mistake the schema cannot see.
 */
export function azureAddressing(baseUrl: string, apiVersion?: string): AzureAddressing {
  const url = new URL(baseUrl);
  if (url.search !== "" || url.hash !== "") {
    throw new Error("base_url must not have a query string; put the API version in api_version");
  }
  const root = `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
  if (/\/openai\/deployments(\/|$)/.test(url.pathname)) {
    throw new Error(
      "base_url must be the resource endpoint (https://{resource}.openai.azure.com), not a deployment URL; " +
        "each target's model names its deployment",
    );
  }
  if (V1_SUFFIX.test(root)) return { form: "v1", root, apiVersion };
  if (apiVersion !== undefined) {
    return { form: "classic", root: root.replace(/\/openai$/, ""), apiVersion };
  }
  throw new Error(
    "set api_version (e.g. 2024-10-21) for the classic /openai/deployments/{deployment} API, or set base_url " +
      "to the v1 API root ending in /openai/v1 (https://{resource}.openai.azure.com/openai/v1)",
  );
}

/** The URL of `operation` for `deployment`; the deployment is percent-encoded as one path segment. */
export function azureUrl(addressing: AzureAddressing, deployment: string, operation: AzureOperation): string {
  const query = addressing.apiVersion === undefined
    ? ""
    : `?api-version=${encodeURIComponent(addressing.apiVersion)}`;
  if (addressing.form === "v1") return `${addressing.root}/${operation}${query}`;
  return `${addressing.root}/openai/deployments/${encodeURIComponent(deployment)}/${operation}${query}`;
}

/** Request headers: operator extras first, so that they cannot replace the key, content type or accept. */
export function azureHeaders(
  config: Pick<AzureProviderConfig, "api_key" | "headers">,
  requestId: string,
  stream: boolean,
): Record<string, string> {
  return {
    ...config.headers,
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "api-key": config.api_key,
    "x-client-request-id": requestId,
  };
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Top-level chunk fields that identify the chunk rather than annotate it. */
const IDENTITY_KEYS = new Set(["id", "object", "created", "model", "choices", "usage", "system_fingerprint"]);

/**
 * Makes Azure's stream OpenAI-shaped without losing annotations:
 *
 * - An annotation-only chunk (`choices: []`, no usage: Azure's first chunk with `prompt_filter_results`, or
 *   the older `prompt_annotations`) is held and its annotation fields are added to the next chunk. Passing it
 *   on would give clients a chunk OpenAI never sends (and one that breaks `chunk.choices[0]` code).
 * - A chunk with an empty `id` (asynchronous-filter annotations) gets the stream's id and `created`.
 * - `object` is always `chat.completion.chunk`; a choice without `delta` gets `{}`.
 * - Usage chunks (`choices: []` with usage) pass unchanged; the server decides whether the client sees them.
 */
export class AzureChunkStream extends TransformStream<ChatCompletionChunk, ChatCompletionChunk> {
  constructor() {
    super(azureChunkTransformer());
  }
}

/** The stage behind {@linkcode AzureChunkStream}, as a transformer that `pullThrough` can also run. */
export function azureChunkTransformer(): SyncTransformer<ChatCompletionChunk, ChatCompletionChunk> {
  let identity: { id: string; created: number } | undefined;
  let held: JsonObject | undefined;
  return {
    transform(chunk, controller) {
      if (chunk.choices.length === 0 && (chunk.usage === undefined || chunk.usage === null)) {
        held ??= {};
        for (const [key, value] of Object.entries(chunk)) {
          if (!IDENTITY_KEYS.has(key)) held[key] = value;
        }
        return;
      }
      const out: ChatCompletionChunk = { ...chunk, object: "chat.completion.chunk" };
      if (typeof chunk.id === "string" && chunk.id !== "") {
        identity ??= { id: chunk.id, created: chunk.created };
      } else if (identity !== undefined) {
        out.id = identity.id;
        out.created = identity.created;
      }
      out.choices = chunk.choices.map((choice) => isObject(choice.delta) ? choice : { ...choice, delta: {} });
      if (held !== undefined) {
        for (const [key, value] of Object.entries(held)) {
          if (out[key] === undefined || out[key] === null) out[key] = value;
        }
        held = undefined;
      }
      controller.enqueue(out);
    },
  };
}

/** The fields of `innererror.content_filter_result(s)` that were filtered, as `hate (high)`, `jailbreak`. */
function filteredCategories(innererror: unknown): string[] {
  if (!isObject(innererror)) return [];
  const results = innererror.content_filter_result ?? innererror.content_filter_results;
  if (!isObject(results)) return [];
  const out: string[] = [];
  for (const [category, result] of Object.entries(results)) {
    if (!isObject(result) || result.filtered !== true) continue;
    out.push(typeof result.severity === "string" ? `${category} (${result.severity})` : category);
  }
  return out;
}

/**
 * Reads an Azure error body into OpenAI's four fields. Azure's numeric-string codes ("401", "429") are HTTP
 * statuses, not error codes: 429 becomes OpenAI's `rate_limit_exceeded`, the others null. A content-filter
 * 400 keeps `code: content_filter` and `param: prompt`; the filtered categories from `innererror` (which
 * OpenAI's error shape has no field for) are appended to the message so the client still learns why.
 */
export function azureErrorFields(status: number, text: string): ParsedUpstreamError {
  const parsed = parseUpstreamErrorBody(text);
  if (parsed.code !== null && /^\d+$/.test(parsed.code)) {
    parsed.code = status === 429 ? "rate_limit_exceeded" : null;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return parsed;
  }
  const error = isObject(json) && isObject(json.error) ? json.error : undefined;
  const categories = filteredCategories(error?.innererror);
  if (categories.length > 0 && parsed.message !== null) {
    parsed.message = `${parsed.message} (filtered: ${categories.join(", ")})`;
  }
  return parsed;
}

async function failIfNotOk(secrets: readonly string[], provider: string, res: UpstreamResponse) {
  if (res.status >= 200 && res.status < 300) return;
  const text = await res.text().catch(() => "");
  throw upstreamHttpError(provider, res.status, azureErrorFields(res.status, text), res.headers, secrets);
}

/**
 * Creates the provider for one `type: azure` config entry. Throws a plain `Error` when the entry names no
 * usable addressing form, so `check` and `serve` report it as a config issue rather than failing requests.
 */
export function createAzureProvider(config: AzureProviderConfig): Provider {
  const addressing = azureAddressing(config.base_url, config.api_version);
  const secrets: readonly string[] = [config.api_key];
  return {
    async chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult> {
      const provider = call.target.provider;
      const deployment = call.target.model;
      const stream = request.stream === true;
      const res = await sendUpstream({
        url: azureUrl(addressing, deployment, "chat/completions"),
        headers: azureHeaders(config, call.requestId, stream),
        // Classic Azure ignores `model` (the path picks the deployment); v1 needs it. Sent in both forms.
        body: JSON.stringify(toUpstreamChatBody(request, deployment, config.stream_usage)),
      }, call);
      await failIfNotOk(secrets, provider, res);
      if (!stream) {
        return { kind: "json", body: chatCompletionFrom(provider, await readUpstreamJson(provider, res)) };
      }
      const chunks = pullThrough(
        res.body,
        sseParseTransformer({ maxEventBytes: upstreamLimits(call).maxEventBytes, provider }),
        openAIChunkTransformer(provider, secrets),
        azureChunkTransformer(),
      );
      return { kind: "stream", chunks };
    },

    async embed(request: EmbeddingRequest, call: UpstreamCall): Promise<EmbeddingResult> {
      const provider = call.target.provider;
      const deployment = call.target.model;
      const res = await sendUpstream({
        url: azureUrl(addressing, deployment, "embeddings"),
        headers: azureHeaders(config, call.requestId, false),
        body: JSON.stringify(toUpstreamEmbeddingBody(request, deployment)),
      }, call);
      await failIfNotOk(secrets, provider, res);
      return embeddingResultFrom(provider, await readUpstreamJson(provider, res));
    },
  };
}
