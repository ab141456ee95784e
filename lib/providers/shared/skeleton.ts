/**
 * The one HTTP skeleton every HTTP vendor runs: build the vendor request, authorize it, send it through the
 * shared transport, map a non-2xx answer to a `GatewayError`, then translate the whole answer or run the
 * stream through the vendor's stages. A vendor supplies a {@linkcode ProviderAdapter}: a handful of functions
 * without I/O of their own, so everything vendor-specific is testable without a socket and everything about
 * sending (timeouts, aborts, status handling, broken bodies) is written, and tested, once.
 *
 * @module
 */
import { GatewayError } from "../../errors.ts";
import {
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatRequest,
  type EmbeddingRequest,
  isObject,
  type JsonObject,
} from "../../openai/types.ts";
import { type SseEvent, sseParseTransformer } from "../../sse/parse.ts";
import { pullStages, type Stages, type SyncTransformer } from "../../streams/pull_through.ts";
import type {
  ChatResult,
  EmbeddingCall,
  EmbeddingResult,
  MessagesCall,
  ModerationRequest,
  ModerationResult,
  NativeMessagesResult,
  NativeResponsesResult,
  Provider,
  ResponsesCall,
  TokenCountInput,
  UpstreamCall,
} from "../types.ts";
import { type AnswerKind, fieldScrubStage, scrubAnswerFields } from "./answer_fields.ts";
import { parseJsonObject } from "./json.ts";
import { sendUpstream, upstreamLimits, type UpstreamRequest, type UpstreamResponse } from "./transport.ts";

/** One upstream call of an embeddings request: its JSON object body, and the headers (token counts, …). */
export interface JsonAnswer {
  json: JsonObject;
  headers: Headers;
}

/** Sends one vendor request (authorized, status-checked) and reads its body as a JSON object. */
export type SendJson = (request: UpstreamRequest) => Promise<JsonAnswer>;

/** What a vendor supplies to become a {@linkcode Provider}. None of these functions touches the network. */
export interface ProviderAdapter {
  /**
   * The vendor request for a chat (`request.stream` says which kind), without credentials. Throws a
   * `GatewayError` for what the vendor cannot do (unsupported parameters).
   */
  chatRequest(request: ChatRequest, call: UpstreamCall): UpstreamRequest;
  /** Adds the credentials: an API key header, or a signature (which may be asynchronous). */
  authorize(request: UpstreamRequest): UpstreamRequest | Promise<UpstreamRequest>;
  /** The error for a non-2xx answer, with the vendor's secrets scrubbed from anything echoed. */
  httpError(provider: string, status: number, text: string, headers: Headers): GatewayError;
  /** A whole (non-stream) answer's body → the OpenAI completion; a 502 for a body it cannot read. */
  completion(text: string, call: UpstreamCall): ChatCompletion;
  /** The stages a streamed body goes through, from bytes to chunks. */
  streamStages(call: UpstreamCall): Stages<Uint8Array, ChatCompletionChunk>;
  /** Embeddings, making the upstream calls (one or several) through `send`. */
  embed(request: EmbeddingRequest, call: EmbeddingCall, send: SendJson): Promise<EmbeddingResult>;
  /**
   * Only for an upstream that speaks the Responses API: the request passing a Responses body through
   * (`body.stream` says which kind), without credentials. With {@linkcode responsesStages}, it makes the
   * provider's `responses` method.
   */
  responsesRequest?(body: JsonObject, call: ResponsesCall): UpstreamRequest;
  /** The stages a native Responses stream goes through, from bytes to event objects. */
  responsesStages?(call: UpstreamCall): Stages<Uint8Array, JsonObject>;
  /**
   * Throws the upstream's error when a 200's JSON body is the vendor's error body instead of the answer
   * (`isErrorBody`, shared/upstream_error.ts), mapped as the vendor's error inside a 200 stream is, its secrets
   * scrubbed; returns for any other body. Applied to a passed-through whole answer (a Response or compaction, a
   * GenerateContentResponse, a Message, a moderation, a token count; any other body is the client API's or the
   * adapter's reader's to check) and to a JSON body answering any stream request. Without it, every body passes on
   * as read.
   */
  errorBody?(json: JsonObject, call: UpstreamCall): void;
  /**
   * Only for an upstream that speaks the Responses API: the request passing a compaction body through
   * (`POST {base}/responses/compact`), without credentials. It makes the provider's `compact` method.
   */
  compactRequest?(body: JsonObject, call: ResponsesCall): UpstreamRequest;
  /**
   * Only for an upstream that speaks Google's Gemini API: the request passing a `generateContent` body through
   * (streamed or not), without credentials. With {@linkcode geminiStages}, it makes the provider's `gemini`.
   */
  geminiRequest?(body: JsonObject, stream: boolean, call: UpstreamCall): UpstreamRequest;
  /** The stages a passed-through Gemini stream goes through, from bytes to chunk objects. */
  geminiStages?(call: UpstreamCall): Stages<Uint8Array, JsonObject>;
  /**
   * Only for an upstream that speaks Anthropic's Messages API: the request passing a Messages body through
   * (`body.stream` says which kind), without credentials. With {@linkcode messagesStages}, it makes the
   * provider's `messages` method.
   */
  messagesRequest?(body: JsonObject, call: MessagesCall): UpstreamRequest;
  /** The stages a native Messages stream goes through, from bytes to event objects. */
  messagesStages?(call: UpstreamCall): Stages<Uint8Array, JsonObject>;
  /**
   * Only for a vendor with OpenAI's moderations endpoint: the request classifying `request`, without
   * credentials. With {@linkcode moderationResult}, it makes the provider's `moderate` method.
   */
  moderationRequest?(request: ModerationRequest, call: UpstreamCall): UpstreamRequest;
  /** The moderation answer's id and results; a 502 `GatewayError` for an answer it cannot read. */
  moderationResult?(json: JsonObject, provider: string): ModerationResult;
  /**
   * Only for a vendor with a token-counting endpoint: the counting request for `input`, without credentials, or
   * `null` for a request it cannot count. With {@linkcode inputTokens}, it makes `countInputTokens`.
   */
  countTokensRequest?(input: TokenCountInput, call: UpstreamCall): UpstreamRequest | null;
  /**
   * The one other counting request to send when the first is refused as invalid (a 400), or `null` for none:
   * for a vendor whose counting endpoint takes only some forms of a model id, and which form differs by model.
   */
  countTokensFallback?(input: TokenCountInput, call: UpstreamCall): UpstreamRequest | null;
  /** The count in the counting endpoint's answer; a 502 `GatewayError` for an answer without one. */
  inputTokens?(json: JsonObject, provider: string): number;
}

/**
 * `chain` with the answer-field scrub as its last stage (shared/answer_fields.ts), when the call has a scrubber that
 * knows a secret; `chain` itself otherwise, so a config without secrets adds no stage to any stream.
 */
function scrubbedStages<I, O extends object>(chain: Stages<I, O>, call: UpstreamCall): Stages<I, O> {
  const scrubber = call.scrubber;
  if (scrubber === undefined || scrubber.size === 0) return chain;
  return { list: [...chain.list, fieldScrubStage<O>(scrubber) as SyncTransformer<unknown, unknown>] };
}

/**
 * The {@linkcode Provider} that runs `adapter` around the shared transport. Every success answer it returns,
 * whole or streamed, translated or passed through, has what it says of itself (ids, finish reasons, tiers, event
 * types; not its content) scrubbed with the call's scrubber (answer_fields.ts): an upstream may echo its key there,
 * and from here on every client API forwards them.
 */
export function providerFromAdapter(adapter: ProviderAdapter): Provider {
  /** Sends `request`; a non-2xx answer is thrown, and so is a JSON error body answering a `stream` request. */
  async function send(
    request: UpstreamRequest,
    call: UpstreamCall,
    stream = false,
  ): Promise<UpstreamResponse> {
    const authorized = adapter.authorize(request);
    const res = await sendUpstream(authorized instanceof Promise ? await authorized : authorized, call);
    if (res.status < 200 || res.status >= 300) {
      const text = await res.text().catch(() => "");
      throw adapter.httpError(call.target.provider, res.status, text, res.headers);
    }
    return stream && adapter.errorBody !== undefined && isJsonType(res.headers.get("content-type"))
      ? await jsonForStream(res, call)
      : res;
  }

  /**
   * A 200 JSON answer to a stream request. Proxies, vLLM, LiteLLM and OpenRouter answer a stream so when it fails
   * before its first event (a rate limit): the body is read whole, within `server.upstream_limits.max_body_size`
   * as any JSON answer, and when it is the vendor's error (`errorBody`) that is thrown as for a whole answer, so
   * routing retries and falls back by its status and the client, sent nothing yet, gets that error. Any other body
   * goes on to the stream stages as read, which fail on it as before. An event stream costs one header check.
   */
  async function jsonForStream(res: UpstreamResponse, call: UpstreamCall): Promise<UpstreamResponse> {
    const text = await res.text();
    const json = parsedObject(text);
    if (json !== undefined) adapter.errorBody?.(json, call);
    const body = new Blob([text]).stream().getReader();
    return { status: res.status, headers: res.headers, body, text: () => Promise.resolve(text) };
  }

  /**
   * A whole answer's JSON object, unless it is the upstream's error (`errorBody`): a 200 `{"error": {"code": 429,
   * …}}` is thrown as that 429, in the upstream's words, before the adapter's reader would call it malformed (a 502).
   */
  const answerJson = (text: string, call: UpstreamCall): JsonObject => {
    const json = parseJsonObject(call.target.provider, text);
    adapter.errorBody?.(json, call);
    return json;
  };

  /**
   * A passed-through whole answer's JSON object ({@linkcode answerJson}), its fields scrubbed (answer_fields.ts):
   * a Response's (`kind`) with the settings it repeats of its request.
   */
  const nativeJson = (text: string, call: UpstreamCall, kind: AnswerKind = "answer"): JsonObject =>
    scrubAnswerFields(answerJson(text, call), call.scrubber, kind, text);

  const provider: Provider = {
    async chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult> {
      const res = await send(adapter.chatRequest(request, call), call, request.stream === true);
      if (request.stream !== true) {
        return {
          kind: "json",
          body: scrubAnswerFields(adapter.completion(await res.text(), call), call.scrubber),
        };
      }
      return {
        kind: "stream",
        chunks: pullStages(res.body, scrubbedStages(adapter.streamStages(call), call)),
      };
    },

    async embed(request: EmbeddingRequest, call: EmbeddingCall): Promise<EmbeddingResult> {
      return await adapter.embed(request, call, async (upstream) => {
        const res = await send(upstream, call);
        const text = await res.text();
        const json = parseJsonObject(call.target.provider, text);
        return { json: scrubAnswerFields(json, call.scrubber, "answer", text), headers: res.headers };
      });
    },
  };

  const {
    responsesRequest,
    responsesStages,
    compactRequest,
    geminiRequest,
    geminiStages,
    messagesRequest,
    messagesStages,
    countTokensRequest,
    countTokensFallback,
    inputTokens,
    moderationRequest,
    moderationResult,
  } = adapter;
  if (responsesRequest && responsesStages) {
    provider.responses = async (body: JsonObject, call: ResponsesCall): Promise<NativeResponsesResult> => {
      const res = await send(responsesRequest(body, call), call, body.stream === true);
      if (body.stream !== true) {
        return { kind: "json", body: nativeJson(await res.text(), call, "response") };
      }
      return { kind: "stream", events: pullStages(res.body, scrubbedStages(responsesStages(call), call)) };
    };
  }
  if (geminiRequest && geminiStages) {
    provider.gemini = async (body: JsonObject, stream: boolean, call: UpstreamCall) => {
      const res = await send(geminiRequest(body, stream, call), call, stream);
      if (!stream) return { kind: "json", body: nativeJson(await res.text(), call) };
      return { kind: "stream", events: pullStages(res.body, scrubbedStages(geminiStages(call), call)) };
    };
  }
  if (compactRequest) {
    provider.compact = async (body: JsonObject, call: ResponsesCall): Promise<JsonObject> => {
      const res = await send(compactRequest(body, call), call);
      return nativeJson(await res.text(), call);
    };
  }
  if (messagesRequest && messagesStages) {
    provider.messages = async (body: JsonObject, call: MessagesCall): Promise<NativeMessagesResult> => {
      const res = await send(messagesRequest(body, call), call, body.stream === true);
      if (body.stream !== true) {
        return { kind: "json", body: nativeJson(await res.text(), call) };
      }
      return { kind: "stream", events: pullStages(res.body, scrubbedStages(messagesStages(call), call)) };
    };
  }
  if (moderationRequest && moderationResult) {
    provider.moderate = async (request: ModerationRequest, call: UpstreamCall): Promise<ModerationResult> => {
      const res = await send(moderationRequest(request, call), call);
      return moderationResult(nativeJson(await res.text(), call), call.target.provider);
    };
  }
  if (countTokensRequest && inputTokens) {
    provider.countInputTokens = async (
      input: TokenCountInput,
      call: UpstreamCall,
    ): Promise<number | null> => {
      const request = countTokensRequest(input, call);
      if (request === null) return null;
      let res: UpstreamResponse;
      try {
        res = await send(request, call);
      } catch (err) {
        // At most two calls: the fallback is asked only after a 400, and its own failure is the answer.
        const again = err instanceof GatewayError && err.status === 400
          ? countTokensFallback?.(input, call) ?? null
          : null;
        if (again === null) throw err;
        res = await send(again, call);
      }
      return inputTokens(answerJson(await res.text(), call), call.target.provider);
    };
  }
  return provider;
}

/** Whether a `content-type` is JSON (`application/json`, `application/problem+json`, with or without parameters). */
function isJsonType(type: string | null): boolean {
  return type !== null && /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(type);
}

/** `text` parsed, when it is a JSON object. */
function parsedObject(text: string): JsonObject | undefined {
  try {
    const json: unknown = JSON.parse(text);
    return isObject(json) ? json : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The authorize step of a vendor whose key travels in one header, set last so that operator headers cannot
 * replace it.
 */
export function keyHeader(name: string, key: string): (request: UpstreamRequest) => UpstreamRequest {
  return (request) => {
    request.headers[name] = key;
    return request;
  };
}

/** The first stage of every SSE vendor's stream: bytes → events, under the call's event size limit. */
export function sseEvents(call: UpstreamCall): SyncTransformer<Uint8Array, SseEvent> {
  return sseParseTransformer({
    maxEventBytes: upstreamLimits(call).maxEventBytes,
    provider: call.target.provider,
  });
}
