/**
 * The shapes routing hands the answer runner: a target's answer over the chat form or in the client API's own
 * wire format, how a client API's native targets are called, and what routing needs of the request. Their own
 * module so the runner and the response cache (cached_route.ts) share them without importing each other.
 *
 * @module
 */
import type { ChatCompletion, ChatCompletionChunk, ChatRequest, JsonObject } from "../openai/types.ts";
import type { NativeResponsesResult, Provider } from "../providers/types.ts";
import type { ResolvedTarget } from "../config/types.ts";
import type { Peeked } from "./stream_body.ts";

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

/** Whether a routed answer is a native one. */
export function isNativeAnswer(answer: ChatAnswer | NativeAnswer): answer is NativeAnswer {
  return answer.kind === "native" || answer.kind === "native_stream";
}

/** How a client API's native targets (those that speak its wire format) are called. */
export interface NativeRoute {
  /** Whether `target` speaks the client API (the capability table). */
  speaks: (target: ResolvedTarget) => boolean;
  /** Calls the target with the passed-through body; undefined when its provider lacks the method. */
  call: (target: ResolvedTarget, provider: Provider) => Promise<NativeResponsesResult | undefined>;
  /** Whether a whole answer is the API's object, and its name for the 502 when it is not. */
  valid: (body: JsonObject) => boolean;
  what: string;
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
}
