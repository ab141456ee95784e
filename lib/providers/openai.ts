/**
 * Any OpenAI-compatible upstream: OpenAI itself, vLLM, Ollama, llama.cpp, LM Studio, Groq, Together,
 * Mistral, DeepSeek, OpenRouter … The wire format is already OpenAI's, so translation is small: set the
 * upstream model, ask for stream usage, validate what comes back, normalise errors.
 *
 * @module
 */
import type { OpenAIProviderConfig } from "../config/schema.ts";
import { badGateway } from "../errors.ts";
import { type SseEvent, sseParseTransformer } from "../sse/parse.ts";
import { sendUpstream, upstreamLimits, type UpstreamResponse } from "./transport.ts";
import type { ChatResult, EmbeddingResult, Provider, UpstreamCall } from "./types.ts";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatRequest,
  EmbeddingRequest,
  JsonObject,
} from "../openai/types.ts";
import { upstreamHttpError, upstreamStreamError } from "./upstream_error.ts";
import { pullThrough, type SyncTransformer } from "../streams/pull_through.ts";

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

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Parses one upstream SSE event into a chunk. Returns "done" for `[DONE]`, throws a `GatewayError` for an
 * error event or a malformed chunk.
 */
export function parseChunkEvent(
  provider: string,
  event: SseEvent,
  secrets: readonly string[] = [],
): ChatCompletionChunk | "done" {
  if (event.data === "[DONE]") return "done";
  let data: unknown;
  try {
    data = JSON.parse(event.data);
  } catch {
    throw badGateway(
      `Provider "${provider}" sent a stream event that is not JSON.`,
      "upstream_invalid_response",
    );
  }
  if (!isObject(data)) {
    throw badGateway(
      `Provider "${provider}" sent a stream event that is not an object.`,
      "upstream_invalid_response",
    );
  }
  if (event.event === "error" || data.error !== undefined && data.error !== null) {
    throw upstreamStreamError(provider, data, secrets);
  }
  if (!Array.isArray(data.choices)) {
    throw badGateway(`Provider "${provider}" sent a chunk without choices.`, "upstream_invalid_response");
  }
  return data as ChatCompletionChunk;
}

/**
 * Turns upstream SSE events into chunks. A stream that ends without `[DONE]` and without any finish_reason
 * was cut short, and errors rather than pretending to be complete.
 */
export class OpenAIChunkStream extends TransformStream<SseEvent, ChatCompletionChunk> {
  constructor(provider: string) {
    super(openAIChunkTransformer(provider));
  }
}

/** The stage behind {@linkcode OpenAIChunkStream}, as a transformer that `pullThrough` can also run. */
export function openAIChunkTransformer(
  provider: string,
  secrets: readonly string[] = [],
): SyncTransformer<SseEvent, ChatCompletionChunk> {
  let done = false;
  let finishSeen = false;
  return {
    transform(event, controller) {
      if (done) return;
      const chunk = parseChunkEvent(provider, event, secrets);
      if (chunk === "done") {
        done = true;
        controller.terminate();
        return;
      }
      if (chunk.choices.some((c) => c.finish_reason != null)) finishSeen = true;
      controller.enqueue(chunk);
    },
    flush() {
      if (!done && !finishSeen) {
        throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
      }
    },
  };
}

function requestHeaders(config: OpenAIProviderConfig, call: UpstreamCall, stream: boolean) {
  const headers: Record<string, string> = {
    ...config.headers,
    "content-type": "application/json",
    accept: stream ? "text/event-stream" : "application/json",
    "x-client-request-id": call.requestId,
  };
  if (config.api_key) headers.authorization = `Bearer ${config.api_key}`;
  return headers;
}

function endpoint(config: OpenAIProviderConfig, path: string): string {
  return config.base_url.replace(/\/+$/, "") + path;
}

async function failIfNotOk(secrets: readonly string[], provider: string, res: UpstreamResponse) {
  if (res.status >= 200 && res.status < 300) return;
  const text = await res.text().catch(() => "");
  throw upstreamHttpError(provider, res.status, text, res.headers, secrets);
}

/** Reads a non-stream upstream answer that must be a JSON object; anything else is a 502. */
export async function readUpstreamJson(provider: string, res: UpstreamResponse): Promise<JsonObject> {
  const text = await res.text();
  try {
    const json = JSON.parse(text);
    if (isObject(json)) return json;
  } catch { /* reported below */ }
  throw badGateway(
    `Provider "${provider}" returned a body that is not a JSON object.`,
    "upstream_invalid_response",
  );
}

/** Validates an OpenAI-shaped non-stream completion: it must at least have `choices`; the rest passes on. */
export function chatCompletionFrom(provider: string, body: JsonObject): ChatCompletion {
  if (!Array.isArray(body.choices)) {
    throw badGateway(
      `Provider "${provider}" returned a completion without choices.`,
      "upstream_invalid_response",
    );
  }
  return body as ChatCompletion;
}

/** Validates an OpenAI-shaped embeddings answer and keeps what the server needs (vectors and usage). */
export function embeddingResultFrom(provider: string, body: JsonObject): EmbeddingResult {
  const data = body.data;
  const valid = Array.isArray(data) && data.every((d) =>
    isObject(d) && typeof d.index === "number" &&
    (Array.isArray(d.embedding) || typeof d.embedding === "string")
  );
  if (!valid) {
    throw badGateway(
      `Provider "${provider}" returned malformed embeddings.`,
      "upstream_invalid_response",
    );
  }
  const usage = isObject(body.usage) ? body.usage : {};
  const prompt = typeof usage.prompt_tokens === "number" ? usage.prompt_tokens : 0;
  const total = typeof usage.total_tokens === "number" ? usage.total_tokens : prompt;
  return { data: data as EmbeddingResult["data"], usage: { prompt_tokens: prompt, total_tokens: total } };
}

/** Creates the provider for one `type: openai` config entry. */
export function createOpenAIProvider(config: OpenAIProviderConfig): Provider {
  const secrets: readonly string[] = config.api_key ? [config.api_key] : [];
  return {
    async chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult> {
      const provider = call.target.provider;
      const stream = request.stream === true;
      const res = await sendUpstream({
        url: endpoint(config, "/chat/completions"),
        headers: requestHeaders(config, call, stream),
        body: JSON.stringify(toUpstreamChatBody(request, call.target.model, config.stream_usage)),
      }, call);
      await failIfNotOk(secrets, provider, res);
      if (!stream) {
        return { kind: "json", body: chatCompletionFrom(provider, await readUpstreamJson(provider, res)) };
      }
      const chunks = pullThrough(
        res.body,
        sseParseTransformer({ maxEventBytes: upstreamLimits(call).maxEventBytes, provider }),
        openAIChunkTransformer(provider, secrets),
      );
      return { kind: "stream", chunks };
    },

    async embed(request: EmbeddingRequest, call: UpstreamCall): Promise<EmbeddingResult> {
      const provider = call.target.provider;
      const res = await sendUpstream({
        url: endpoint(config, "/embeddings"),
        headers: requestHeaders(config, call, false),
        body: JSON.stringify(toUpstreamEmbeddingBody(request, call.target.model)),
      }, call);
      await failIfNotOk(secrets, provider, res);
      return embeddingResultFrom(provider, await readUpstreamJson(provider, res));
    },
  };
}
