/**
 * The Responses API of an upstream that speaks it natively (`native_responses: true`, OpenAI and Azure): the
 * event stream read into validated event objects, and the input-token counting request and answer. The
 * request body itself is the client's (already rewritten by the handler), so nothing here builds one.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { TOKEN_COUNTS_FIELDS } from "../../openai/token_counts.ts";
import { isObject, isResponseObject, type JsonObject } from "../../openai/types.ts";
import { isTokenCount } from "../../openai/usage_counts.ts";
import type { SseEvent } from "../../sse/parse.ts";
import { stages, type SyncTransformer } from "../../streams/pull_through.ts";
import { type ProviderAdapter, sseEvents } from "../shared/skeleton.ts";
import { eventNotAnObject, parseEventJson } from "../shared/json.ts";
import { upstreamStreamError } from "../shared/upstream_error.ts";
import type { OpenAIBeta, TokenCountInput, UpstreamCall } from "../types.ts";

/** The events that end a Responses stream; a stream that stops before one of them was cut short. */
const FINAL_EVENTS = new Set(["response.completed", "response.incomplete", "response.failed"]);

/**
 * Parses one upstream Responses SSE event into its JSON object. An `error` event (by its `event:` line or its
 * `type`) throws the upstream's error as a `GatewayError`, its fields scrubbed of `secrets`; an event that is
 * not an object with a string `type`, or a final event whose `response` is not a Response
 * ({@linkcode isResponseObject}, the check a whole answer passes), is a 502: the final Response is what the
 * client keeps and the gateway stores, so a `null` or `[]` in its place is the upstream's malformed stream, not
 * a completed one. Returns `"done"` for a `[DONE]` sentinel, which some OpenAI-compatible servers add.
 */
export function parseResponsesEvent(
  provider: string,
  event: SseEvent,
  secrets: readonly string[] = [],
): JsonObject | "done" {
  if (event.data === "[DONE]") return "done";
  const data = parseEventJson(provider, event.data);
  if (!isObject(data)) throw eventNotAnObject(provider);
  if (event.event === "error" || data.type === "error") {
    // OpenAI's error event carries its fields at the top level ({type, code, message, param}); some servers nest
    // them under `error` as their HTTP errors do. Either way only the error fields are read, then scrubbed.
    const fields = isObject(data.error)
      ? data.error
      : { message: data.message, code: data.code, param: data.param };
    throw upstreamStreamError(provider, { error: fields }, secrets);
  }
  if (typeof data.type !== "string") {
    throw badGateway(
      `Provider "${provider}" sent a stream event without a type.`,
      "upstream_invalid_response",
    );
  }
  if (FINAL_EVENTS.has(data.type) && !isResponseObject(data.response)) {
    throw badGateway(
      `Provider "${provider}" sent a ${data.type} event without a Response object.`,
      "upstream_invalid_response",
    );
  }
  return data;
}

/**
 * Upstream SSE events → Responses event objects, in the order sent. A stream that ends before its final
 * `response.completed` / `.incomplete` / `.failed` event was cut short and errors rather than ending cleanly.
 */
export function responsesEventTransformer(
  provider: string,
  secrets: readonly string[] = [],
): SyncTransformer<SseEvent, JsonObject> {
  let final = false;
  return {
    transform(event, controller) {
      if (final) return;
      const data = parseResponsesEvent(provider, event, secrets);
      // `[DONE]` before the final event: the server gave up on the response.
      if (data === "done") throw cutShort(provider);
      if (FINAL_EVENTS.has(data.type as string)) final = true;
      controller.enqueue(data);
      if (final) controller.terminate();
    },
    flush() {
      if (!final) throw cutShort(provider);
    },
  };
}

function cutShort(provider: string) {
  return badGateway(`Provider "${provider}" ended the stream before it was complete.`);
}

/** The body of a counting request for `input`, or `null` when the client sent no Responses body. */
export function countTokensBody(input: TokenCountInput): JsonObject | null {
  const body = input.responses;
  if (body === undefined) return null;
  const out: JsonObject = {};
  // Only `TokenCountsBody` fields: the rest of a Responses body would be refused there as unknown.
  for (const key of TOKEN_COUNTS_FIELDS) if (body[key] != null) out[key] = body[key];
  return out;
}

/** The count in a `response.input_tokens` answer; a 502 for an answer without a usable one. */
export function inputTokensOf(json: JsonObject, provider: string): number {
  const count = json.input_tokens;
  if (!isTokenCount(count)) {
    throw badGateway(
      `Provider "${provider}" answered the token count without a valid input_tokens.`,
      "upstream_invalid_response",
    );
  }
  return count;
}

/** The adapter functions of a native Responses upstream (see {@linkcode nativeResponsesAdapter}). */
export type NativeResponsesFunctions = Required<
  Pick<
    ProviderAdapter,
    | "responsesRequest"
    | "responsesStages"
    | "compactRequest"
    | "countTokensRequest"
    | "inputTokens"
  >
>;

/** The header of a beta opt-in; an operator's `headers` may spell it in any case. */
const BETA = "openai-beta";

/** The names in an `openai-beta` value (comma-separated), trimmed, empty ones left out. */
function betaNames(value: string): string[] {
  return value.split(",").map((name) => name.trim()).filter((name) => name !== "");
}

/**
 * `headers` with the client's beta opt-in (`beta.header`) added to the operator's own `openai-beta` names, each
 * once: `headers` itself without one.
 */
function withBetaHeader(headers: Record<string, string>, beta: OpenAIBeta | null): Record<string, string> {
  if (beta === null || beta.header === null) return headers;
  const out: Record<string, string> = {};
  const names: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === BETA) names.push(...betaNames(value));
    else out[name] = value;
  }
  for (const name of betaNames(beta.header)) if (!names.includes(name)) names.push(name);
  out[BETA] = names.join(",");
  return out;
}

/** `url` with the `beta=true` of the beta resource when the client's request had it. */
function withBetaQuery(url: string, beta: OpenAIBeta | null): string {
  if (beta === null || !beta.query) return url;
  return `${url}${url.includes("?") ? "&" : "?"}beta=true`;
}

/**
 * The native Responses functions of an adapter whose upstream speaks OpenAI's Responses API itself (OpenAI,
 * Azure; `native_responses: true`): the client's body passed through, its events read and validated, and its
 * input tokens counted by the upstream, and compactions passed through. A whole answer (a Response, a compaction)
 * that is instead an `{"error": …}` without `output`, answered with a 200, is the upstream's error by the adapter's
 * `errorBody` (`openAIErrorBody`, response.ts), as for chat; any other body is left for the client API's check (a
 * 502 for what is no Response, or no compaction). The upstreams differ only in where (`url` of `responses`,
 * `responses/input_tokens` or `responses/compact`) and with which headers (without credentials) a request goes,
 * and in whether the client's beta opt-in goes too (`forwardsBeta`: the capability table's `openaiBeta`), as
 * the client sent it: its `openai-beta` names, and its `?beta=true`.
 */
export function nativeResponsesAdapter(
  url: (path: "responses" | "responses/input_tokens" | "responses/compact") => string,
  headers: (call: UpstreamCall, stream: boolean) => Record<string, string>,
  secrets: readonly string[],
  forwardsBeta = false,
): NativeResponsesFunctions {
  const beta = (opted: OpenAIBeta | null | undefined) => forwardsBeta ? opted ?? null : null;
  return {
    responsesRequest: (body, call) => ({
      url: withBetaQuery(url("responses"), beta(call.openaiBeta)),
      headers: withBetaHeader(headers(call, body.stream === true), beta(call.openaiBeta)),
      body: JSON.stringify(body),
    }),
    responsesStages: (call) =>
      stages(sseEvents(call), responsesEventTransformer(call.target.provider, secrets)),
    compactRequest: (body, call) => ({
      url: withBetaQuery(url("responses/compact"), beta(call.openaiBeta)),
      headers: withBetaHeader(headers(call, false), beta(call.openaiBeta)),
      body: JSON.stringify(body),
    }),
    countTokensRequest: (input, call) => {
      const body = countTokensBody(input);
      if (body === null) return null;
      return {
        url: withBetaQuery(url("responses/input_tokens"), beta(input.openaiBeta)),
        headers: withBetaHeader(headers(call, false), beta(input.openaiBeta)),
        body: JSON.stringify(body),
      };
    },
    inputTokens: inputTokensOf,
  };
}
