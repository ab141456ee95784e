/**
 * Anthropic's Messages API passed through (`/v1/messages` → an `anthropic` provider): the headers of the call,
 * and the stream stage reading the upstream's SSE events into event objects. The body is the client's (already
 * rewritten by the handler), so nothing here builds one; nothing is translated either, so thinking signatures,
 * `cache_control`, documents and beta blocks reach the client as the upstream sent them.
 *
 * @module
 */
import type { AnthropicProviderConfig } from "../../config/schema.ts";
import { badGateway } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { SseEvent } from "../../sse/parse.ts";
import type { SyncTransformer } from "../../streams/pull_through.ts";
import { eventNotAnObject, parseEventJson } from "../shared/json.ts";
import type { MessagesCall } from "../types.ts";
import { anthropicStreamError } from "./response.ts";

/** The header names Anthropic reads, in the case the operator's `headers` may spell them otherwise. */
const VERSION = "anthropic-version";
const BETA = "anthropic-beta";

/**
 * The headers of a passed-through Messages call, before the key: the operator's `headers`, the
 * `anthropic-version` (an operator's `anthropic-version` in `headers` pins it; otherwise the client's, since its
 * SDK knows which version its requests are written for; the configured `anthropic_version` when the client sent
 * none), and `anthropic-beta` with the operator's betas and the client's, each once.
 */
export function nativeMessagesHeaders(
  config: AnthropicProviderConfig,
  call: MessagesCall,
  stream: boolean,
): Record<string, string> {
  const headers: Record<string, string> = {};
  let betas: string[] = [];
  let pinned: string | undefined;
  for (const [name, value] of Object.entries(config.headers)) {
    const lower = name.toLowerCase();
    if (lower === BETA) betas = splitBetas(value);
    else if (lower === VERSION) pinned = value;
    else headers[name] = value;
  }
  for (const beta of splitBetas(call.anthropicBeta ?? "")) if (!betas.includes(beta)) betas.push(beta);
  if (betas.length > 0) headers[BETA] = betas.join(",");
  headers[VERSION] = pinned ?? call.anthropicVersion ?? config.anthropic_version;
  headers["content-type"] = "application/json";
  headers.accept = stream ? "text/event-stream" : "application/json";
  return headers;
}

/** The names in an `anthropic-beta` value (comma-separated), trimmed, empty ones left out. */
export function splitBetas(value: string): string[] {
  return value.split(",").map((b) => b.trim()).filter((b) => b !== "");
}

/**
 * One upstream Messages event (its JSON object) checked as the client will need it: an object with a string
 * `type` (taken from the `event:` line when the data lacks one). An `error` event throws the upstream's error
 * as a `GatewayError` carrying Anthropic's error type (`overloaded_error` …), its text scrubbed of `secrets`.
 */
export function parseMessagesEvent(
  provider: string,
  data: unknown,
  name: string | undefined,
  secrets: readonly string[],
) {
  if (!isObject(data)) throw eventNotAnObject(provider);
  const type = typeof data.type === "string" ? data.type : name;
  if (type === "error") throw anthropicStreamError(provider, data, secrets);
  if (typeof type !== "string" || type === "") {
    throw badGateway(
      `Provider "${provider}" sent a stream event without a type.`,
      "upstream_invalid_response",
    );
  }
  return data.type === type ? data : { ...data, type };
}

/**
 * The stage after a stream's framing: each event's object as it arrives; nothing is read after `message_stop`,
 * and a stream that ends before it was cut short and errors (a 502) rather than looking complete.
 */
export function messagesEventTransformer<T>(
  provider: string,
  read: (input: T) => { data: unknown; name?: string } | null,
  secrets: readonly string[] = [],
): SyncTransformer<T, JsonObject> {
  let done = false;
  return {
    transform(input, controller) {
      if (done) return;
      const raw = read(input);
      if (raw === null) return;
      const event = parseMessagesEvent(provider, raw.data, raw.name, secrets);
      controller.enqueue(event);
      if (event.type === "message_stop") {
        done = true;
        controller.terminate();
      }
    },
    flush() {
      if (!done) throw badGateway(`Provider "${provider}" ended the stream before it was complete.`);
    },
  };
}

/** Anthropic's SSE events → event objects (see {@linkcode messagesEventTransformer}). */
export function anthropicEventTransformer(
  provider: string,
  secrets: readonly string[] = [],
): SyncTransformer<SseEvent, JsonObject> {
  return messagesEventTransformer<SseEvent>(
    provider,
    (event) => ({ data: parseEventJson(provider, event.data), name: event.event }),
    secrets,
  );
}
