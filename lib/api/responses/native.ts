/**
 * A Responses request passed through to an upstream that speaks the Responses API natively, and its answer
 * passed back: pure rewriting only. Upstream-bound, the client's body keeps every field it sent (built-in
 * tools, reasoning items, `include`, …) with the target's model, the output limit the policy set, the
 * conversation rebuilt or the upstream's own `previous_response_id`, and the content rules' redactions.
 * Client-bound, each Response object (whole, or inside a `response.*` event) gets the gateway's `resp_` id, the
 * alias as `model` and the client's `previous_response_id`; everything else is the upstream's.
 *
 * Nothing here steers the upstream URL or headers: the body is the only thing the client's request shapes.
 *
 * @module
 */
import type { TokenClasses } from "../../pricing/cost.ts";
import type { ResolvedContentRule } from "../../config/types.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { readCounts } from "../../openai/usage_counts.ts";
import { readableItem } from "./compaction_item.ts";
import { unreadableReasoning } from "./gateway_reasoning.ts";
import type { Conversation } from "../../usage/responses_store.ts";
import { redactedBody } from "../../policy/content_rules.ts";
import { responsesTexts } from "./native_texts.ts";
import { parseScrubbed } from "../../secrets/scrub_json.ts";

/** How the body a native target gets differs from the client's. */
export interface NativeChanges {
  /** The target's model (for Azure, the deployment). */
  model: string;
  /** The output limit that applies after policy (the token's ceiling may have lowered or set it). */
  maxOutputTokens: number | null;
  /**
   * The upstream's id of the previous response, when it was served natively by this same provider: passed as
   * `previous_response_id` and nothing is rebuilt.
   */
  upstreamPrevious?: string;
  /** Otherwise, with a `previous_response_id`, the stored conversation to put before the new input. */
  history?: Pick<Conversation, "items" | "nativeBy">;
  /** The target's provider: the reasoning items of `history` it produced itself go back to it. */
  provider?: string;
  /**
   * The request's own input as items (a string input is one user message), with `item_reference`s replaced by
   * the stored items they name: what an array input is sent as, so any upstream can read it.
   */
  input: readonly JsonObject[];
}

/**
 * A stored conversation as input items for a native target of `provider`. A reasoning item goes back only to the
 * provider that produced it, and only with its `encrypted_content` (what `include:
 * ["reasoning.encrypted_content"]` asks for: Codex's way with `store: false`): for another one it is another
 * model's encrypted state, and without that content nothing of it can be read back. Ids are dropped: they are
 * not this upstream's, or name items a `store: false` upstream never kept.
 */
export function historyItems(
  history: Pick<Conversation, "items" | "nativeBy">,
  provider: string | undefined,
): JsonObject[] {
  const out: JsonObject[] = [];
  history.items.forEach((item, i) => {
    if (item.type === "reasoning") {
      const own = provider !== undefined && history.nativeBy[i] === provider;
      if (!own || typeof item.encrypted_content !== "string") return;
    }
    const { id: _id, ...rest } = item;
    out.push(rest);
  });
  return out;
}

/**
 * The changes for a body that asks `target` about the conversation without answering it (a token count, a
 * compaction): its model, no output limit, and the stored conversation `earlier` (if any) resent whole before
 * `input`, never the upstream's own `previous_response_id`.
 */
export function resentChanges(
  target: { model: string; provider: string },
  input: readonly JsonObject[],
  earlier: Conversation | null,
): NativeChanges {
  return {
    model: target.model,
    maxOutputTokens: null,
    input,
    history: earlier ?? undefined,
    provider: target.provider,
  };
}

/**
 * The body sent to a native target: the client's with {@linkcode NativeChanges} applied, without the reasoning
 * items it could not read back (gateway_reasoning.ts: the handler names them).
 */
export function nativeRequestBody(client: JsonObject, changes: NativeChanges): JsonObject {
  const body: JsonObject = { ...client, model: changes.model };
  if (changes.maxOutputTokens !== null) body.max_output_tokens = changes.maxOutputTokens;
  // The gateway's own compaction items are the gateway's to read: the upstream gets their summary as a message.
  // Its own reasoning items, and any without encrypted content under `store: false`, no native upstream can look
  // up (gateway_reasoning.ts): left out.
  const stored = client.store !== false;
  const input = changes.input.filter((item) => !unreadableReasoning(item, stored)).map(readableItem);
  if (Array.isArray(client.input)) body.input = input;
  delete body.previous_response_id;
  if (changes.upstreamPrevious !== undefined) body.previous_response_id = changes.upstreamPrevious;
  else if (changes.history !== undefined) {
    body.input = [...historyItems(changes.history, changes.provider).map(readableItem), ...input];
  }
  return body;
}

/** What identifies the client's Response, whatever the upstream called it. */
export interface NativeFrame {
  /** The gateway's `resp_` id. */
  id: string;
  alias: string;
  /** The client's `previous_response_id` (a gateway id), or null. */
  previousResponseId: string | null;
  /** Scrubs a text the upstream wrote into an error (every string of it) before the client sees it. */
  scrub: (text: string) => string;
}

/** An upstream Response object as the client's: the frame's id, alias and previous id, its error scrubbed. */
export function clientResponse(upstream: JsonObject, frame: NativeFrame): JsonObject {
  const out: JsonObject = {
    ...upstream,
    id: frame.id,
    model: frame.alias,
    previous_response_id: frame.previousResponseId,
  };
  if (isObject(upstream.error)) out.error = scrubbedError(upstream.error, frame.scrub);
  return out;
}

/**
 * `error` with every string in it scrubbed, keys too: an upstream that quotes a credential may put it in any
 * field of its error (the code, the param, one of its own, a key of its own), not only in the message, and the
 * code goes on into the usage record and the metrics. Through JSON, as the logger does, so a mask never breaks
 * a value; an upstream error is small and rare.
 */
function scrubbedError(error: JsonObject, scrub: (text: string) => string): JsonObject {
  return parseScrubbed(JSON.stringify(error), scrub) as JsonObject;
}

/** An upstream stream event as the client's: its Response rewritten, numbered `sequence`. */
export function clientEvent(event: JsonObject, frame: NativeFrame, sequence: number): JsonObject {
  const out: JsonObject = { ...event, sequence_number: sequence };
  if (isObject(event.response)) out.response = clientResponse(event.response, frame);
  return out;
}

/**
 * Token counts as the upstream reported them in a Response's `usage`, or undefined without usable ones: a count
 * that is not one (lib/openai/usage_counts.ts), details included, makes the whole usage untrusted.
 */
export function nativeUsage(response: unknown): TokenClasses | undefined {
  if (!isObject(response) || !isObject(response.usage)) return undefined;
  const usage = response.usage;
  // The Responses API counts cached input within input_tokens and reasoning within output_tokens, as chat does.
  const cached = isObject(usage.input_tokens_details) ? usage.input_tokens_details.cached_tokens : undefined;
  const reasoning = isObject(usage.output_tokens_details)
    ? usage.output_tokens_details.reasoning_tokens
    : undefined;
  return readCounts((count) => {
    const classes: TokenClasses = {
      prompt: count(usage.input_tokens),
      completion: count(usage.output_tokens),
    };
    const cachedRead = count(cached, undefined);
    const reasoningTokens = count(reasoning, undefined);
    if (cachedRead !== undefined) classes.cachedRead = cachedRead;
    if (reasoningTokens !== undefined) classes.reasoning = reasoningTokens;
    const searches = webSearchCalls(response.output);
    if (searches > 0) classes.webSearches = searches;
    return classes;
  });
}

/**
 * The web searches a Response's output shows the upstream ran, priced per call (its usage has no count of
 * them): its `web_search_call` items but those that failed, as Anthropic bills no failed search (OpenAI's
 * pricing counts calls and says nothing of failed ones).
 */
function webSearchCalls(output: unknown): number {
  if (!Array.isArray(output)) return 0;
  let calls = 0;
  for (const item of output) {
    if (isObject(item) && item.type === "web_search_call" && item.status !== "failed") calls++;
  }
  return calls;
}

/**
 * A native body with an alias's redact rules applied to its texts (native_texts.ts), as the policy applied them
 * to the request's chat form (deny rules were already judged there, and on the texts only a native target
 * reads), each then as the input guardrails left it (`guarded`: `RequestGuardrails.nativeRewrites`): the body
 * itself when nothing changed, else a rewritten copy.
 */
export function redactNative(
  body: JsonObject,
  rules: readonly ResolvedContentRule[],
  guarded?: ReadonlyMap<string, string>,
): JsonObject {
  return redactedBody(body, responsesTexts, rules, guarded);
}
