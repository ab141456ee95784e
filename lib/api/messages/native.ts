/**
 * An Anthropic Messages request passed through to an upstream that speaks the Messages API (Anthropic, Claude on
 * Bedrock), and its answer passed back: pure rewriting only. Upstream-bound, the client's body keeps every field
 * and block it sent (thinking blocks and their signatures, `cache_control`, documents, beta fields) with the
 * target's model, the output limit the policy set, and the content rules' redactions in its texts (documents'
 * too). Client-bound, the Message (whole, or in `message_start`) shows the alias as `model`; its `msg_` id and
 * everything else are the upstream's.
 *
 * The thinking blocks the gateway made itself (an empty `signature`) are the one thing left out
 * (unsigned_thinking.ts).
 *
 * Nothing here steers the upstream URL or headers: the body is the only thing the client's request shapes.
 *
 * @module
 */
import type { TokenClasses } from "../../pricing/cost.ts";
import type { ResolvedContentRule } from "../../config/types.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { readCounts } from "../../openai/usage_counts.ts";
import { pushText, type SaidTexts, saidTextsOf, type TextSink } from "../../openai/said_fields.ts";
import { redactedBody } from "../../policy/content_rules.ts";
import { messagesTexts } from "./native_texts.ts";
import { withoutUnsignedThinking } from "./unsigned_thinking.ts";
import { isCallBlock } from "./call_blocks.ts";

/** How the body a native target gets differs from the client's. */
export interface NativeMessagesChanges {
  /** The target's model (for Bedrock, the model id or inference profile, which goes in the URL). */
  model: string;
  /** The output limit that applies after policy (the token's ceiling may have lowered it); null: the client's. */
  maxTokens: number | null;
}

/**
 * The body sent to a native target: the client's with {@linkcode NativeMessagesChanges} applied, without the
 * thinking blocks the gateway made, which no Claude takes back (unsigned_thinking.ts: named by
 * `noteMessagesDropped`). A thinking budget that the lowered limit no longer leaves room for is lowered with it
 * (Anthropic requires `budget_tokens < max_tokens`), never below Anthropic's minimum of 1,024, where the
 * upstream's 400 stands.
 */
export function nativeMessagesBody(client: JsonObject, changes: NativeMessagesChanges): JsonObject {
  const body: JsonObject = { ...withoutUnsignedThinking(client).body, model: changes.model };
  const limit = changes.maxTokens;
  if (limit === null || typeof client.max_tokens !== "number" || limit >= client.max_tokens) return body;
  body.max_tokens = limit;
  const thinking = body.thinking;
  if (
    isObject(thinking) && thinking.type === "enabled" && typeof thinking.budget_tokens === "number" &&
    thinking.budget_tokens >= limit
  ) {
    body.thinking = { ...thinking, budget_tokens: Math.max(1024, limit - 1) };
  }
  return body;
}

/**
 * A native Messages body with an alias's redact rules applied to its texts (native_texts.ts: the system prompt,
 * text blocks, tool results, text documents), as the policy applied them to the request's chat form (deny rules
 * were judged there, and on the texts only a native target reads), each then as the input guardrails left it
 * (`guarded`: `RequestGuardrails.nativeRewrites`): the body itself when nothing changed, else a rewritten copy.
 * Thinking blocks are left alone: their signature covers their text.
 */
export function redactMessages(
  body: JsonObject,
  rules: readonly ResolvedContentRule[],
  guarded?: ReadonlyMap<string, string>,
): JsonObject {
  return redactedBody(body, messagesTexts, rules, guarded);
}

/** An upstream Message as the client's: the alias as `model`, everything else (id included) the upstream's. */
export function clientMessage(upstream: JsonObject, alias: string): JsonObject {
  return { ...upstream, model: alias };
}

/** An upstream stream event as the client's: `message_start`'s Message rewritten, every other event as it is. */
export function clientMessageEvent(event: JsonObject, alias: string): JsonObject {
  if (event.type !== "message_start" || !isObject(event.message)) return event;
  return { ...event, message: clientMessage(event.message, alias) };
}

/** Token counts as Anthropic reports them. */
export interface MessagesUsage {
  input: number;
  output: number;
  cacheCreation: number;
  /** Of the cache writes, those kept an hour (`cache_creation.ephemeral_1h_input_tokens`); the rest 5-minute. */
  cacheCreation1h: number;
  cacheRead: number;
  /** Web searches Anthropic ran for the answer (`server_tool_use.web_search_requests`), priced per search. */
  webSearches: number;
}

/**
 * The counts in an Anthropic `usage` object laid over `base` (a stream's `message_delta` carries cumulative
 * counts for what it names); undefined when neither has input and output counts, or when a count it names is
 * not one (lib/openai/usage_counts.ts: then the whole usage is untrusted and the gateway counts).
 */
export function readMessagesUsage(usage: unknown, base?: MessagesUsage): MessagesUsage | undefined {
  const u = isObject(usage) ? usage : {};
  const split = isObject(u.cache_creation) ? u.cache_creation.ephemeral_1h_input_tokens : undefined;
  const searches = isObject(u.server_tool_use) ? u.server_tool_use.web_search_requests : undefined;
  const read = readCounts((count) => ({
    input: count(u.input_tokens, base?.input),
    output: count(u.output_tokens, base?.output),
    cacheCreation: count(u.cache_creation_input_tokens, base?.cacheCreation ?? 0),
    cacheCreation1h: count(split, base?.cacheCreation1h ?? 0),
    cacheRead: count(u.cache_read_input_tokens, base?.cacheRead ?? 0),
    webSearches: count(searches, base?.webSearches ?? 0),
  }));
  if (read === undefined || read.input === undefined || read.output === undefined) return undefined;
  return { ...read, input: read.input, output: read.output };
}

/**
 * The usage record's counts: Anthropic's `input_tokens` leaves out the cached tokens, which the record's prompt
 * counts (as OpenAI's `prompt_tokens` does, and as the translated Anthropic path reports them).
 */
export function usageTokens(usage: MessagesUsage): TokenClasses {
  // Anthropic's input excludes its cache reads and writes; the gateway's prompt count includes them, and they
  // are priced apart, the writes by lifetime (`cache_creation` splits them; without it, all are 5-minute).
  const oneHour = Math.min(usage.cacheCreation1h, usage.cacheCreation);
  return {
    prompt: usage.input + usage.cacheCreation + usage.cacheRead,
    completion: usage.output,
    cachedRead: usage.cacheRead,
    cacheWrite5m: usage.cacheCreation - oneHour,
    cacheWrite1h: oneHour,
    ...(usage.webSearches > 0 ? { webSearches: usage.webSearches } : {}),
  };
}

/** The texts of a Message's content (text, thinking, tool calls' input), for counting its tokens without usage. */
export function messageTexts(message: JsonObject): string[] {
  const out: string[] = [];
  pushMessageTexts(message, out);
  return out;
}

/**
 * A Message's texts as content capture shows them: its thinking apart from its answer, as
 * {@linkcode pushEventText} tells a stream's apart.
 */
export function messageSaid(message: JsonObject): SaidTexts {
  return saidTextsOf((sink) => pushMessageTexts(message, sink));
}

/** Adds to `out` the texts of a Message's content ({@linkcode messageTexts}): a thinking block's as reasoning. */
function pushMessageTexts(message: JsonObject, out: TextSink): void {
  for (const block of Array.isArray(message.content) ? message.content : []) {
    if (!isObject(block)) continue;
    if (typeof block.text === "string") out.push(block.text);
    if (typeof block.thinking === "string") pushText(out, block.thinking, true);
    // A call's input the model wrote (a client tool's arguments, a web search's query, a code execution's code),
    // as a stream's `input_json_delta`s are counted whatever the block.
    if (isCallBlock(block) && block.input !== undefined) out.push(JSON.stringify(block.input));
  }
}

/** The text a stream event adds (a text, thinking or tool input delta), for counting when no usage comes. */
export function eventText(event: JsonObject): string | undefined {
  let found: string | undefined;
  pushEventText(event, { push: (text) => found = text });
  return found;
}

/** Adds to `out` the text a stream event adds ({@linkcode eventText}): a thinking delta's as reasoning. */
export function pushEventText(event: JsonObject, out: TextSink): void {
  if (event.type !== "content_block_delta" || !isObject(event.delta)) return;
  const { text, thinking, partial_json: json } = event.delta;
  if (typeof text === "string") out.push(text);
  else if (typeof thinking === "string") pushText(out, thinking, true);
  else if (typeof json === "string") out.push(json);
}
