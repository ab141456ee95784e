/**
 * The cache key of a request: a digest of everything that can change its answer, and nothing else.
 *
 * The request is keyed as translated to the chat form, so the same question asked through chat completions,
 * Responses, Messages or Gemini is one entry. It is canonicalised (object keys sorted; numbers as JSON prints
 * them, so `0.70` and `0.7` are one number; `max_tokens` and `max_completion_tokens` are one field; a content
 * that is a single text part is its text), so two clients that serialise the same request differently meet
 * the same entry. Left out is only what does not change the answer: whether it streams and its stream
 * options, who asks (`user`, `metadata`, `safety_identifier`), whether it is stored, and the provider-side
 * prompt-cache hint. The scope (the token's identity, its environment, or shared), the alias and the alias's
 * version (what serves it) come first, so an entry never crosses tenants or outlives a change of targets.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { ChatMessage, ChatRequest } from "../openai/types.ts";
import { isObject } from "../openai/types.ts";

/** Bumped when what a key covers changes, so older entries are never read as newer ones. */
export const KEY_VERSION = "1";

/** Fields of the chat form that do not change the answer. */
const NOT_KEYED: ReadonlySet<string> = new Set([
  "model",
  "stream",
  "stream_options",
  "user",
  "metadata",
  "safety_identifier",
  "store",
  "prompt_cache_key",
]);

/** What a key is made of besides the request. */
export interface KeyScope {
  /** `tok:<identity>`, `env:<environment>` or `shared`. */
  scope: string;
  alias: string;
  /** The alias's version (what serves it). */
  version: string;
}

/** JSON with object keys sorted at every level, `undefined` members left out. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(",")}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A message's content in one spelling: a single text part is its text. */
function canonicalMessage(message: ChatMessage): ChatMessage {
  const content = message.content;
  if (Array.isArray(content) && content.length === 1) {
    const part = content[0];
    if (
      isObject(part) && part.type === "text" && typeof part.text === "string" &&
      Object.keys(part).length === 2
    ) {
      return { ...message, content: part.text };
    }
  }
  return message;
}

/** The keyed part of a chat request. */
export function keyedRequest(chat: ChatRequest): Record<string, unknown> {
  const keyed: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(chat)) {
    if (!NOT_KEYED.has(name)) keyed[name] = value;
  }
  if (keyed.max_tokens !== undefined && keyed.max_completion_tokens === undefined) {
    keyed.max_completion_tokens = keyed.max_tokens;
  }
  delete keyed.max_tokens;
  keyed.messages = chat.messages.map(canonicalMessage);
  return keyed;
}

/** The hex digest that names a request's entry. */
export function cacheKey(scope: KeyScope, chat: ChatRequest): string {
  return digest(scope, canonicalJson(keyedRequest(chat)));
}

/** The hex digest of any keyed value under `scope` (a natively passed-through request's key). */
export function keyOf(scope: KeyScope, keyed: unknown): string {
  return digest(scope, canonicalJson(keyed));
}

/**
 * For the semantic cache: the request's last user turn (its text), and the key of everything else, which must
 * match exactly for a semantic hit. Undefined when the request has no user turn whose content is text.
 */
export function semanticParts(
  scope: KeyScope,
  chat: ChatRequest,
): { context: string; text: string } | undefined {
  const keyed = keyedRequest(chat);
  const messages = keyed.messages as ChatMessage[];
  const last = messages.findLastIndex((m) => m.role === "user");
  if (last < 0 || typeof messages[last].content !== "string") return undefined;
  const text = messages[last].content as string;
  keyed.messages = messages.map((m, i) => i === last ? { ...m, content: null } : m);
  return { context: digest({ ...scope, scope: `semantic:${scope.scope}` }, canonicalJson(keyed)), text };
}

function digest(scope: KeyScope, request: string): string {
  return createHash("sha256")
    .update(JSON.stringify([KEY_VERSION, scope.scope, scope.alias, scope.version]))
    .update(request)
    .digest("hex");
}
