/**
 * The shapes routing hands the answer runner: a target's answer over the chat form or in the client API's own
 * wire format, how a client API's native targets are called, and what routing needs of the request. Their own
 * module so the runner and the response cache
 * (cached_route.ts) share them without importing each other.
 *
 * @module
 */
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, JsonObject } from "../openai/types.ts";
import type { SaidTexts } from "../openai/said_fields.ts";
import type { NativeResponsesResult, Provider } from "../providers/types.ts";
import type { ResolvedTarget } from "../config/types.ts";
import type { Peeked } from "./stream_body.ts";
import type { StreamStart } from "./stream_start.ts";
import type { ChoiceEnding } from "../cache/opt_ins.ts";
import type { ChatForm } from "../http/tolerance.ts";

/** A target's answer over the chat form: a whole completion, or a stream whose first chunk is in hand. */
export type ChatAnswer =
  | { kind: "json"; body: ChatCompletion }
  | { kind: "stream"; stream: Peeked<ChatCompletionChunk> };

/**
 * A target's answer in the client API's own wire format (passed through): its object (a Response, a Message),
 * or its event stream with the first event in hand.
 */
export type NativeAnswer =
  | { kind: "native"; body: JsonObject }
  | { kind: "native_stream"; stream: Peeked<JsonObject> };

/** How a client API's native targets (those that speak its wire format) are called. */
export interface NativeRoute {
  /** Whether `target` speaks the client API (the capability table). */
  speaks: (target: ResolvedTarget) => boolean;
  /** Calls the target with the passed-through body; undefined when its provider lacks the method. */
  call: (target: ResolvedTarget, provider: Provider) => Promise<NativeResponsesResult | undefined>;
  /** Whether a whole answer is the API's object, and its name for the 502 when it is not. */
  valid: (body: JsonObject) => boolean;
  what: string;
  /**
   * Which of a stream's events show the client something of the answer, and which say the upstream failed to
   * answer (stream_start.ts): the events before the first that shows are held, and a failure among them is the
   * attempt's, so routing may still retry or fall back. Absent: the stream commits at its first event.
   */
  start?: StreamStart<JsonObject>;
  /**
   * How the response cache keys and judges this API's passed-through answers, asked for only when the alias is
   * cached (so an uncached request builds nothing for it); absent: they are not cached.
   */
  cache?: () => NativeCacheSpec;
  /**
   * How this API's answers tell the request's trace what they say of themselves, asked for only when the request
   * is traced (a request without telemetry builds and runs nothing of it), once per answer (a stream's reader
   * may keep what earlier events said); absent: the trace learns only the answer's `id` and `model` fields.
   */
  facts?: () => NativeFacts;
}

/**
 * What an answer in a client API's own wire format says of itself, in the GenAI conventions' terms, as a
 * translated answer's chat form tells its trace (traced_answer.ts): the passed-through answer never becomes a
 * chat completion, so each client API reads its own wire format once, here.
 */
export interface NativeFacts {
  /** A whole answer's facts. */
  answer: (body: JsonObject) => NativeAnswerFacts;
  /** What one stream event says (most say nothing); the stream's texts are what its body forwarded. */
  event: (event: JsonObject) => NativeAnswerFacts | undefined;
}

/** What a native answer, or one of its stream events, tells the trace; every field when known. */
export interface NativeAnswerFacts {
  /** The upstream's answer id. */
  id?: unknown;
  /** The model that answered, as the upstream names it. */
  model?: unknown;
  /**
   * Why it ended, in the chat form's words (`stop`, `length`, `tool_calls`, `content_filter`), as the
   * translated path reports the same answer.
   */
  finishReasons?: string[];
  /** Its usage's classes: the cached input read, the reasoning output. */
  tokens?: { cachedRead?: number; reasoning?: number };
  /** A whole answer's texts, for content capture: its answer, and its reasoning apart. */
  said?: SaidTexts;
}

/**
 * How a whole answer in a client API's own wire format ended, for the response cache: one entry per choice
 * (a Gemini candidate; Responses and Messages answers have one), judged by the cache's one rule of its opt-ins
 * (lib/cache/opt_ins.ts) as a chat-form answer's choices are.
 */
export type NativeEnding = readonly ChoiceEnding[];

/** What the response cache needs of a client API to cache its passed-through answers (cached_native.ts). */
export interface NativeCacheSpec {
  /** The client API: a native entry hits only requests of the same API. */
  api: "responses" | "messages" | "gemini";
  /** The client's body as passed through (the target's model and the policy's changes are put in later). */
  body: JsonObject;
  /**
   * What else goes upstream with the body and changes the answer (the Messages API's forwarded
   * `anthropic-version` and `anthropic-beta`), or what the answer is good for (whether a Responses upstream kept
   * it to be continued from): keyed with it.
   */
  keyed?: JsonObject;
  /**
   * How the answer ended, choice by choice, from its values in order (the one body, or every stream event):
   * whether each hands the client a call to run, and whether it was cut off; undefined when they do not make a
   * whole answer (a stream without its final event).
   */
  ending: (values: readonly JsonObject[]) => NativeEnding | undefined;
  /** Whether a stream event is the stream's last (its body may stop reading there). */
  isFinal?: (event: JsonObject) => boolean;
  /**
   * Where the upstream's answer id is, for a replay to get a fresh one (`msg_…`); absent when the client API
   * gives its client an id of its own anyway (Responses: the gateway's `resp_…`, the upstream's kept for
   * continuations).
   */
  idOf?: (first: JsonObject) => unknown;
  /**
   * One stored value as a replay made at `now` (epoch ms) shows it: the times it says the answer was made (and
   * finished) at set to `now`, as a translated hit's `created` is; absent when the API's answers carry no time
   * (Messages). The value was parsed for this replay alone, so it may be changed in place.
   */
  restamp?: (value: JsonObject, now: number) => JsonObject;
}

/** The request as routing sees it: its chat form, whether the client asked for a stream, its client terms. */
export interface RoutedRequest {
  chat: ChatRequest;
  asked: boolean;
  /**
   * Restates a provider's refusal in the client API's terms (an adapter names `response_format` where a
   * Responses client sent `text.format`).
   */
  clientTerms?: (err: unknown) => unknown;
  /**
   * The chat form as the client API judged its targets by before admission (lib/http/tolerance.ts): the params
   * a `target` sent it does not get (`ChatForm.withheld`: the Gemini API's `top_k` on a target that takes none),
   * and the rules the runner judges the targets that speak the client API by when the request's guardrails send
   * them that form too (`chatFormServingTargets`). Absent: every target gets the whole chat form, and none is
   * judged again.
   */
  form?: ChatForm;
  /**
   * Names what the answering `target` went without over the chat form (`x-gateway-dropped` on `headers`, the
   * usage record's `dropped`: lib/http/tolerance.ts), as the client API does once it has the answer. Called too
   * when the request's output guardrails withhold that answer (guarded_answer.ts), which then never reaches the
   * client API: a withheld JSON answer's 400 names what the request went without, as a withheld stream does.
   */
  dropped?: (target: ResolvedTarget, headers: Headers) => void;
}
