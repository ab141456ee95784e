/**
 * Checks on OpenAI-shaped answers (OpenAI-compatible servers and Azure): what the gateway relies on must be
 * there; everything else passes on unchanged.
 *
 * @module
 */
import { badGateway } from "../../errors.ts";
import { type ChatCompletion, isObject, type JsonObject } from "../../openai/types.ts";
import type { EmbeddingResult, UpstreamCall } from "../types.ts";
import type { EmbeddingRequest } from "../../openai/types.ts";
import { needsReasoningFix, normalizeReasoning } from "./reasoning.ts";
import { isTokenCount } from "../../openai/usage_counts.ts";
import { decodeFloat32Base64, isFloat32Vector } from "../../encoding/float32_base64.ts";
import { isErrorBody, upstreamStreamError } from "../shared/upstream_error.ts";

/**
 * Whether a choice's `message` (or a chunk's `delta`) is what every client API reads: an object whose
 * `tool_calls`, when there, is an array of objects. The readers walk the calls and read `.function` on each;
 * `tool_calls: [null]` (or `{}`, which is not iterable) would be the gateway's own TypeError, a 500 with no
 * fallback, where it is the upstream's malformed answer.
 */
export function isReadableMessage(value: unknown): value is JsonObject {
  if (!isObject(value)) return false;
  const calls = value.tool_calls;
  return calls === undefined || calls === null || Array.isArray(calls) && calls.every(isObject);
}

/**
 * Throws the upstream's error when a 200's JSON `body` is an `{"error": …}` in place of the answer
 * ({@linkcode isErrorBody}; `answered` false: no `choices`, no `data`, no `output`). OpenRouter answers so once the
 * model has started (a rate limit as `{"error": {"code": 429, …}}`), as it sends the same error as an event
 * inside a 200 stream. It is mapped as that event is ({@linkcode upstreamStreamError}, `secrets` scrubbed), so the
 * client gets the upstream's status and words and routing retries, falls back and counts it against the target's
 * health as it would the HTTP answer with that status; an error naming no status is a 502 in its words.
 */
export function throwErrorBody(
  provider: string,
  body: JsonObject,
  answered: boolean,
  secrets: readonly string[],
): void {
  if (isErrorBody(body, answered)) throw upstreamStreamError(provider, body, secrets);
}

/**
 * The `errorBody` hook (shared/skeleton.ts) of an OpenAI-shaped upstream (OpenAI-compatible, Azure): a body with
 * `choices` (a chat completion), `output` (a Response, a compaction), `results` (a moderation) or `input_tokens` (a
 * token count) is an answer; any other with an error is the upstream's ({@linkcode throwErrorBody}), for a
 * passed-through whole answer, a moderation, a count and a stream answered as JSON.
 */
export function openAIErrorBody(secrets: readonly string[]): (json: JsonObject, call: UpstreamCall) => void {
  return (json, call) =>
    throwErrorBody(
      call.target.provider,
      json,
      json.choices !== undefined || json.output !== undefined || json.results !== undefined ||
        json.input_tokens !== undefined,
      secrets,
    );
}

/**
 * Validates an OpenAI-shaped non-stream completion: it must have `choices`, each an object with a `message`
 * that {@linkcode isReadableMessage} (what every client API reads); the rest passes on, with a message's
 * `reasoning` as `reasoning_content` (see `reasoning.ts`), and `usage` dropped when its counts are not counts
 * (see {@linkcode withTrustedUsage}).
 *
 * A 200 whose body is an `{"error": …}` without `choices` is the upstream's error, not a malformed completion
 * ({@linkcode throwErrorBody}).
 */
export function chatCompletionFrom(
  provider: string,
  body: JsonObject,
  secrets: readonly string[] = [],
): ChatCompletion {
  const choices = body.choices;
  throwErrorBody(provider, body, choices !== undefined, secrets);
  if (!Array.isArray(choices) || !choices.every((c) => isObject(c) && isReadableMessage(c.message))) {
    throw badGateway(
      `Provider "${provider}" returned a completion without valid choices.`,
      "upstream_invalid_response",
    );
  }
  for (const choice of choices as JsonObject[]) {
    const message = choice.message as JsonObject;
    if (needsReasoningFix(message)) normalizeReasoning(message);
  }
  return withTrustedUsage(body) as unknown as ChatCompletion;
}

/**
 * `value` without its `usage` when the token counts in it are not counts ({@linkcode isTokenCount}, the rule for
 * every vendor: a string, a negative count, 1e20): such usage would be recorded as sent and priced as nothing
 * (or as a fortune), so the gateway counts the tokens itself instead, as for an upstream that reports no usage.
 * A detail count (`prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`, …) that
 * is not a count or claims more than its total is left out, so the client is shown only counts that are.
 */
export function withTrustedUsage(value: JsonObject): JsonObject {
  const usage = value.usage;
  if (usage === undefined || usage === null) return value;
  if (!isObject(usage) || !isTokenCount(usage.prompt_tokens) || !isTokenCount(usage.completion_tokens)) {
    delete value.usage;
    return value;
  }
  trustedDetails(usage.prompt_tokens_details, usage.prompt_tokens);
  trustedDetails(usage.completion_tokens_details, usage.completion_tokens);
  return value;
}

/** Removes from a usage's `*_details` the `*_tokens` counts that are not counts or exceed `total`. */
function trustedDetails(details: unknown, total: number): void {
  if (!isObject(details)) return;
  for (const [key, count] of Object.entries(details)) {
    if (key.endsWith("_tokens") && (!isTokenCount(count) || count > total)) delete details[key];
  }
}

/** How many vectors an embeddings request asks for: one per string or token array of its `input`. */
function inputCount(input: EmbeddingRequest["input"]): number {
  if (typeof input === "string" || input.length === 0 || typeof input[0] === "number") return 1;
  return input.length;
}

/**
 * A vector as an upstream may send it: numbers finite as float32s ({@linkcode isFloat32Vector}), or base64
 * (which some servers send whatever is asked) of a whole, non-zero number of finite float32s. A string that is not (`"not base64!!"`, `""`, a cut float) is
 * no vector: the answer's 502, never a float client's garbage or a base64 client's string passed on unchecked.
 */
function isVector(value: unknown): boolean {
  return isFloat32Vector(typeof value === "string" ? decodeFloat32Base64(value) : value);
}

/**
 * Validates an OpenAI-shaped embeddings answer to `request` and keeps what the server needs (vectors and
 * usage): one vector of numbers per input, indexed 0…n−1 each once, put in index order (a server that batches
 * may answer out of order). An `{"error": …}` without `data` is the upstream's error ({@linkcode throwErrorBody},
 * `secrets` scrubbed); anything else is the upstream's 502: never fewer vectors, or a vector of strings, passed
 * on as a 200.
 */
export function embeddingResultFrom(
  provider: string,
  body: JsonObject,
  request: EmbeddingRequest,
  secrets: readonly string[] = [],
): EmbeddingResult {
  const data = body.data;
  throwErrorBody(provider, body, data !== undefined, secrets);
  const expected = inputCount(request.input);
  const valid = Array.isArray(data) && data.length === expected &&
    data.every((d) =>
      isObject(d) && Number.isInteger(d.index) && (d.index as number) >= 0 &&
      (d.index as number) < expected && isVector(d.embedding)
    ) && new Set(data.map((d) => (d as JsonObject).index)).size === expected;
  if (!valid) {
    throw badGateway(
      `Provider "${provider}" returned malformed embeddings.`,
      "upstream_invalid_response",
    );
  }
  const sorted = (data as EmbeddingResult["data"]).toSorted((a, b) => a.index - b.index);
  const usage = isObject(body.usage) ? body.usage : {};
  const prompt = isTokenCount(usage.prompt_tokens) ? usage.prompt_tokens : 0;
  const total = isTokenCount(usage.total_tokens) ? usage.total_tokens : prompt;
  return { data: sorted, usage: { prompt_tokens: prompt, total_tokens: total } };
}
