/**
 * Token counts the gateway works out itself: a cheap estimate charged against TPM limits before a call, and a
 * real tokenizer count when an upstream reports no usage (records are then marked as estimated).
 *
 * @module
 */
import type { ChatRequest, EmbeddingRequest, JsonObject } from "../openai/types.ts";

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
      if (Array.isArray(message.tool_calls)) {
        // Checked only on assistant messages: elsewhere they are whatever the client sent (null included).
        for (const call of message.tool_calls as (JsonObject | null)[]) {
          const fn = call?.function as JsonObject | undefined;
          if (typeof fn?.arguments === "string") out.push(fn.arguments);
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

let tokenizer: Promise<(text: string) => number> | undefined;
let tokenizerReady = false;

/**
 * The tokenizer's count function, loading it on first use. Evaluating its tables blocks the thread about a
 * second (more on a busy machine): what must not wait that long loads it ahead with {@linkcode loadTokenizer}.
 */
function tokenizerCount(): Promise<(text: string) => number> {
  tokenizer ??= import("gpt-tokenizer/encoding/o200k_base").then((m) => {
    tokenizerReady = true;
    return m.countTokens;
  });
  return tokenizer;
}

/**
 * Loads the tokenizer now, once, ahead of counts that must not pay for its load: a drain loads it while requests
 * still drain, so that the requests it then cuts count theirs at once and their answers are not held back (see
 * lib/serve.ts). Resolves once loaded, or once the load failed (counts then fall back as they always do).
 */
export function loadTokenizer(): Promise<void> {
  return tokenizerCount().then(() => {}, () => {});
}

/** Whether the tokenizer is loaded in this thread (a count then costs no load). */
export function tokenizerLoaded(): boolean {
  return tokenizerReady;
}

/**
 * Longest piece of text the tokenizer gets at once. Its BPE is quadratic in the length of a run without
 * spaces (64 K of one letter took 3 s, 1 MB minutes, all on the event loop), and a client chooses the text.
 */
const PIECE = 2_000;

/**
 * `text` in pieces of at most {@linkcode PIECE} characters, cut before a space that follows a non-space (where
 * the tokenizer's own pre-tokens end, so the count is exact), or where there is none every `PIECE` characters
 * (a surrogate pair kept whole; a long run without spaces may then count a token more per piece).
 */
export function tokenizerPieces(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  while (text.length - start > PIECE) {
    let cut = text.lastIndexOf(" ", start + PIECE);
    while (cut > start && /\s/.test(text[cut - 1])) cut = text.lastIndexOf(" ", cut - 1);
    if (cut <= start) {
      cut = start + PIECE;
      const unit = text.charCodeAt(cut - 1);
      if (unit >= 0xd800 && unit <= 0xdbff) cut--;
    }
    out.push(text.slice(start, cut));
    start = cut;
  }
  out.push(text.slice(start));
  return out;
}

/**
 * Counts tokens with the o200k_base encoding (GPT-4o's). The tokenizer's tables are loaded on first use so that
 * start-up stays fast; a gateway whose upstreams always report usage never loads them (nor does a shutdown,
 * unless it may cut requests: {@linkcode loadTokenizer}).
 */
export async function countTokens(texts: readonly string[]): Promise<number> {
  const count = await tokenizerCount();
  let total = 0;
  for (const text of texts) {
    if (text.length <= PIECE) total += count(text);
    else for (const piece of tokenizerPieces(text)) total += count(piece);
  }
  return total;
}

/** OpenAI's chat format adds about this many tokens around each message, and as many before the answer. */
const TOKENS_PER_MESSAGE = 3;

/**
 * The gateway's own count of a chat request's input: the o200k_base tokenizer over every text the model reads
 * (messages, tool definitions, a response JSON schema) plus the chat format's per-message framing. Images and
 * files are not counted.
 */
export async function estimateInputTokens(chat: ChatRequest): Promise<number> {
  const texts = requestTexts(chat);
  if (Array.isArray(chat.tools)) { for (const tool of chat.tools) texts.push(JSON.stringify(tool)); }
  const format = chat.response_format as JsonObject | undefined;
  if (format?.type === "json_schema") texts.push(JSON.stringify(format.json_schema));
  return await countTokens(texts) + TOKENS_PER_MESSAGE * (chat.messages.length + 1);
}
