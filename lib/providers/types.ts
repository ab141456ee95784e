/**
 * The contract every provider module fulfils. Providers speak OpenAI's wire shapes (`lib/openai/`) on this side
 * and their vendor's on the other; they never import the server, auth or routing.
 *
 * @module
 */
import type { ResolvedTarget } from "../config/types.ts";
import type { Scrubber } from "../secrets/scrubber.ts";
import type { ChunkSource } from "../streams/pull_through.ts";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatRequest,
  EmbeddingRequest,
  JsonObject,
} from "../openai/types.ts";

/**
 * What a provider returns for embeddings. `embedding` may be floats or base64 (little-endian float32); the
 * server converts to whatever the client asked for.
 */
export interface EmbeddingResult {
  data: { index: number; embedding: number[] | string }[];
  usage: { prompt_tokens: number; total_tokens: number };
  /**
   * The vectors are not unit length: Gemini's when `dimensions` cut them below the model's full size (Google
   * normalises the full size only and leaves the rest to the caller). OpenAI's clients score by dot product on
   * the unit vectors OpenAI answers, so its client API normalises these; Gemini's passes them on as Google's.
   */
  unnormalized?: boolean;
}

/**
 * One upstream call of an embeddings request that answered with valid vectors: the texts it had the model read
 * (those it embedded, and a Gemini `title` sent beside one) and the tokens it reported for them (0: none
 * reported, the gateway counts the texts). The vendor bills such a call
 * whether or not the request's other calls succeed.
 */
export interface EmbeddedPart {
  readonly texts: readonly string[];
  readonly tokens: number;
}

/**
 * A moderation request (OpenAI's CreateModerationRequest), validated by the client API: `input` a string, an
 * array of strings, or an array of `text` / `image_url` parts; `model` already the target's when it reaches a
 * provider. Other fields the client sent travel with it.
 */
export interface ModerationRequest extends JsonObject {
  model: string;
  input: string | string[] | JsonObject[];
}

/**
 * What a provider returns for a moderation: the upstream's id (null when it sent none) and its results, each
 * checked to have a boolean `flagged` and `categories` / `category_scores` objects, otherwise as sent.
 */
export interface ModerationResult {
  id: string | null;
  results: JsonObject[];
}

/** The span of one upstream attempt: what the provider sends it and tells it. */
export interface AttemptTrace {
  /**
   * The W3C trace-context headers of the attempt's span (`traceparent`, and `tracestate` when the caller sent
   * one), sent upstream so a traced upstream joins the trace.
   */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Told of each upstream call of the attempt as its response headers arrive: the URL called and the status
   * answered, which the HTTP client conventions put on the span (an attempt of several calls shows its last).
   */
  answered(url: string, status: number): void;
}

/** Everything a provider needs to make one upstream call. */
export interface UpstreamCall {
  readonly target: ResolvedTarget;
  /** Aborted when the client goes away; the provider must abort its upstream request then. */
  readonly signal: AbortSignal;
  readonly requestId: string;
  /** This attempt's span, when telemetry is on. */
  readonly trace?: AttemptTrace;
  /**
   * Told of each upstream call of an embeddings attempt as it answers, by providers that split a request into
   * several calls (Bedrock Titan, one per text; Cohere and Gemini batches). When a later call fails and routing
   * retries, the earlier calls were billed all the same: the caller adds them to the request's one usage record.
   */
  readonly onEmbedded?: (part: EmbeddedPart) => void;
  /**
   * The config's scrubber, for what a success answer says of itself (its `id`, `model`, `finish_reason`, tool
   * call ids, …; shared/answer_fields.ts), which an upstream may fill with the key it was sent. Always set on a client's
   * request (`upstreamCall` in http/context.ts); absent only where no config is at hand (unit tests).
   */
  readonly scrubber?: Scrubber;
}

/**
 * One upstream call of an embeddings request. Beside the call, not in the request: every field of an
 * {@linkcode EmbeddingRequest} may be a client's (`/v1/embeddings` passes its body on as sent), so what the
 * gateway carries for a target must be where no client's JSON can put it.
 */
export interface EmbeddingCall extends UpstreamCall {
  /**
   * Per input, in order, the fields of Google's `EmbedContentRequest` that have no OpenAI form (`taskType`,
   * `title`), as a Gemini API client sent them (`{}` for an input without), a title as the alias's content rules
   * and input guardrails left it. The Gemini API's embed handler sets it for a Gemini target only, whose adapter
   * sends each input's with it; any other target goes without them, and the client is told so.
   */
  readonly geminiFields?: readonly JsonObject[];
}

/**
 * A chat answer: a whole completion, or a stream of chunks, read by one reader (see `ChunkSource`). Its read
 * rejects with a `GatewayError` when the upstream fails mid-way, and cancelling it aborts the upstream request.
 */
export type ChatResult =
  | { readonly kind: "json"; readonly body: ChatCompletion }
  | { readonly kind: "stream"; readonly chunks: ChunkSource<ChatCompletionChunk> };

/**
 * A Responses API answer from an upstream that speaks the Responses API itself (`native_responses: true`): its
 * Response object, or its stream of events (each event's JSON object, validated to have a string `type`, in the
 * order sent). The stream errors with a `GatewayError` when the upstream fails mid-way; cancelling it aborts the
 * upstream request.
 */
export type NativeResponsesResult =
  | { readonly kind: "json"; readonly body: JsonObject }
  | { readonly kind: "stream"; readonly events: ChunkSource<JsonObject> };

/**
 * An Anthropic Messages answer from an upstream that speaks the Messages API itself (Anthropic, Claude on
 * Bedrock): its Message object, or its stream of events (each event's JSON object with a string `type`, in the
 * order sent, `ping`s included, ending with `message_stop`). The stream errors with a `GatewayError` when the
 * upstream fails mid-way or stops before `message_stop`; cancelling it aborts the upstream request.
 */
export type NativeMessagesResult =
  | { readonly kind: "json"; readonly body: JsonObject }
  | { readonly kind: "stream"; readonly events: ChunkSource<JsonObject> };

/**
 * One upstream call of a Messages request passed through: the client's `anthropic-version` and `anthropic-beta`
 * headers (null when not sent, or not a well-formed value) travel with it, since they change what the upstream
 * accepts and answers.
 */
export interface MessagesCall extends UpstreamCall {
  /** The client's `anthropic-version`; the provider's configured version is sent when null. */
  readonly anthropicVersion: string | null;
  /** The client's `anthropic-beta` (comma-separated names). */
  readonly anthropicBeta: string | null;
}

/**
 * The client's opt-in to a beta of OpenAI's Responses API, as the openai SDK's `client.beta.responses` sends it:
 * the `openai-beta` header (comma-separated names, `responses_multi_agent=v1`; null when not sent, or not a
 * well-formed value) and the `?beta=true` of the beta resource's URL (`query`). A provider whose upstream takes
 * it (the capability table's `openaiBeta`) sends both as the client sent them.
 */
export interface OpenAIBeta {
  readonly header: string | null;
  readonly query: boolean;
}

/** One upstream call of a Responses request passed through: the client's beta opt-in travels with it. */
export interface ResponsesCall extends UpstreamCall {
  /** Null when the client opted in to no beta. */
  readonly openaiBeta: OpenAIBeta | null;
}

/**
 * What a vendor counts the input tokens of: the request in the chat form, and, where the client sent a Responses
 * request, its body as sent upstream (model already rewritten), for a vendor that counts Responses requests; where
 * the client sent an Anthropic Messages request, its body likewise, for a vendor that counts Messages requests;
 * a Gemini API request's likewise.
 */
export interface TokenCountInput {
  readonly chat: ChatRequest;
  readonly responses?: JsonObject;
  readonly messages?: JsonObject;
  /** With `messages`: the client's `anthropic-version` and `anthropic-beta`, as on {@linkcode MessagesCall}. */
  readonly anthropicVersion?: string | null;
  readonly anthropicBeta?: string | null;
  /** With `responses`: the client's beta opt-in, as on {@linkcode ResponsesCall}. */
  readonly openaiBeta?: OpenAIBeta | null;
  /**
   * Where the client sent a Gemini API request, its `GenerateContentRequest` as a Gemini target would get it
   * (`nativeGeminiBody`), for a vendor that counts those: its files by URI, `cachedContent` and built-in tools
   * count too, which the chat form goes without.
   */
  readonly gemini?: JsonObject;
}

/**
 * One upstream kind. Failures are thrown as `GatewayError` with OpenAI's status and shape. `chat` and `embed`
 * are every provider's; the optional methods exist only where the upstream can do that thing, and callers test
 * for them.
 */
export interface Provider {
  chat(request: ChatRequest, call: UpstreamCall): Promise<ChatResult>;
  embed(request: EmbeddingRequest, call: EmbeddingCall): Promise<EmbeddingResult>;
  /**
   * Passes a Responses request (model already the target's) through to an upstream that speaks the Responses
   * API (`POST {base}/responses`). Present only for providers configured with `native_responses: true`.
   */
  responses?(body: JsonObject, call: ResponsesCall): Promise<NativeResponsesResult>;
  /**
   * Passes a compaction request (`POST /v1/responses/compact`, model already the target's) through to an
   * upstream that speaks the Responses API; its answer is the upstream's compacted object. Present with
   * `responses`.
   */
  compact?(body: JsonObject, call: ResponsesCall): Promise<JsonObject>;
  /**
   * Passes a Gemini API `generateContent` body through to an upstream that speaks Google's Gemini API (the
   * target's model goes in the URL; `stream` picks `:streamGenerateContent?alt=sse`): its
   * `GenerateContentResponse`, or its stream of them (an error chunk throws). Present for `gemini` providers.
   */
  gemini?(body: JsonObject, stream: boolean, call: UpstreamCall): Promise<NativeResponsesResult>;
  /**
   * Passes an Anthropic Messages request (model already the target's) through to an upstream that speaks the
   * Messages API (`anthropic`; `bedrock` for Claude models only: callers check the target first).
   */
  messages?(body: JsonObject, call: MessagesCall): Promise<NativeMessagesResult>;
  /**
   * Classifies a moderation request (model already the target's) at an upstream that has OpenAI's moderations
   * endpoint (`POST {base}/moderations`). Present for the provider types whose capability row serves
   * `moderation` aliases.
   */
  moderate?(request: ModerationRequest, call: UpstreamCall): Promise<ModerationResult>;
  /**
   * The upstream's exact count of the input tokens of a request, where the vendor has a counting endpoint;
   * `null` for a request this vendor cannot count (the caller estimates instead).
   */
  countInputTokens?(input: TokenCountInput, call: UpstreamCall): Promise<number | null>;
}
