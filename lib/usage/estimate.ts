/**
 * Token counts the gateway works out itself: a cheap estimate charged against TPM limits before a call, and a
 * real tokenizer count when an upstream reports no usage (records are then marked as estimated).
 *
 * @module
 */
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";
import { tokenCounter } from "./token_counter.ts";

export { tokenizerPieces } from "./tokenizer.ts";

/** Every text a chat request or embeddings request sends to the model. */
export function requestTexts(request: ChatRequest | EmbeddingRequest): string[] {
  if ("messages" in request && Array.isArray(request.messages)) {
    const out: string[] = [];
    for (const message of request.messages) {
      const content = message.content;
      if (typeof content === "string") out.push(content);
      else if (Array.isArray(content)) {
        for (const part of content as JsonObject[]) if (typeof part?.text === "string") out.push(part.text);
      }
      // A legacy `function_call` (a client that sends `functions`) is a call the model reads back as a tool call.
      const legacy = message.function_call as JsonObject | null | undefined;
      if (typeof legacy?.arguments === "string") out.push(legacy.arguments);
      if (Array.isArray(message.tool_calls)) {
        // Checked only on assistant messages: elsewhere they are whatever the client sent (null included).
        for (const call of message.tool_calls as (JsonObject | null)[]) {
          const fn = call?.function as JsonObject | undefined;
          if (typeof fn?.arguments === "string") out.push(fn.arguments);
          // A custom tool's call: its raw-text input is what the model reads in place of arguments.
          const custom = call?.custom as JsonObject | undefined;
          if (typeof custom?.input === "string") out.push(custom.input);
        }
      }
    }
    return out;
  }
  const input = (request as EmbeddingRequest).input;
  if (typeof input === "string") return [input];
  if (Array.isArray(input) && input.every((x) => typeof x === "string")) return input as string[];
  return [];
}

/** Token ids sent directly as embeddings input count as themselves. */
export function tokenIdCount(request: EmbeddingRequest): number {
  const input = request.input;
  if (!Array.isArray(input) || input.length === 0 || typeof input[0] === "string") return 0;
  return typeof input[0] === "number"
    ? input.length
    : (input as number[][]).reduce((n, ids) => n + ids.length, 0);
}

/**
 * A quick upper-leaning estimate (about four characters per token, plus a little per message) used only to
 * pre-charge token limits; the charge is corrected with the real usage when the request ends.
 */
export function roughTokenEstimate(texts: readonly string[]): number {
  let chars = 0;
  for (const text of texts) chars += text.length;
  return Math.ceil(chars / 4) + 4 * texts.length;
}

/**
 * Loads the tokenizer now, once, ahead of counts that must not pay for its load: a drain loads it while requests
 * still drain, so that the requests it then cuts count theirs at once and their answers are not held back (see
 * lib/serve.ts). It loads in the token-count worker (`token_counter.ts`), which this starts if it is not running.
 * Resolves once loaded, or once the load failed (counts then fall back as they always do); never rejects.
 */
export function loadTokenizer(): Promise<void> {
  return tokenCounter.load();
}

/** Whether the tokenizer is loaded where this thread counts (a count then costs no load). */
export function tokenizerLoaded(): boolean {
  return tokenCounter.loaded();
}

/**
 * Counts tokens with the o200k_base encoding (GPT-4o's), in a worker thread (`token_counter.ts`): neither the
 * tokenizer's load nor its BPE holds the calling thread. The worker and its tables are loaded on first use so
 * that start-up stays fast; a gateway whose upstreams always report usage never loads them (nor does a shutdown,
 * unless it may cut requests: {@linkcode loadTokenizer}). Long texts are counted in pieces
 * ({@linkcode tokenizerPieces}). When the worker fails the count (it died, or took far too long) the count is the
 * {@linkcode roughTokenEstimate}.
 *
 * `ended`: the signal of a request that waits for this count before it answers. Once it aborts (the client went
 * away, or shutdown ended the request) the count is the rough estimate at once: a count that waits for a
 * tokenizer still loading or busy (seconds) must not keep a request past its end, answerless and unreported.
 */
export function countTokens(texts: readonly string[], ended?: AbortSignal): Promise<number> {
  // Worked out now, so that nothing here holds the texts while the worker counts them (a stream's batches).
  const rough = roughTokenEstimate(texts);
  const count = tokenCounter.count(texts).then((count) => count ?? rough);
  return ended === undefined ? count : orWhenEnded(count, ended, rough);
}

/** `work`'s value, or `fallback` as soon as `ended` aborts (at once if it has). */
function orWhenEnded<T>(work: Promise<T>, ended: AbortSignal, fallback: T): Promise<T> {
  if (ended.aborted) {
    work.catch(() => {});
    return Promise.resolve(fallback);
  }
  return new Promise<T>((resolve, reject) => {
    const onEnd = () => resolve(fallback);
    ended.addEventListener("abort", onEnd, { once: true });
    work.then(resolve, reject).finally(() => ended.removeEventListener("abort", onEnd));
  });
}

/** OpenAI's chat format adds about this many tokens around each message, and as many before the answer. */
const TOKENS_PER_MESSAGE = 3;

/**
 * Every text of a chat request the model reads: its messages' ({@linkcode requestTexts}), its tool definitions
 * (the legacy `functions` too; a custom tool's grammar within its definition) and a response JSON schema.
 */
export function promptTexts(chat: ChatRequest): string[] {
  const texts = requestTexts(chat);
  for (const tools of [chat.tools, chat.functions]) {
    if (Array.isArray(tools)) { for (const tool of tools) texts.push(JSON.stringify(tool)); }
  }
  const format = chat.response_format as JsonObject | undefined;
  if (format?.type === "json_schema") texts.push(JSON.stringify(format.json_schema));
  return texts;
}

/**
 * The gateway's own count of a chat request's input, for every client API (the usage of an answer whose upstream
 * reported none, a count endpoint without a vendor count): the o200k_base tokenizer over {@linkcode promptTexts}
 * plus the chat format's per-message framing. Images and files are not counted. `ended`: as for
 * {@linkcode countTokens}, the texts' rough estimate once the request it answers ended.
 */
export async function estimateInputTokens(chat: ChatRequest, ended?: AbortSignal): Promise<number> {
  return await countTokens(promptTexts(chat), ended) + TOKENS_PER_MESSAGE * (chat.messages.length + 1);
}
