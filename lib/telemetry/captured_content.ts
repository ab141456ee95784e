/**
 * Captured prompts and answers as the GenAI conventions' messages (`gen_ai.input.messages`,
 * `gen_ai.output.messages`): JSON, scrubbed, and at most `telemetry.max_content_size` UTF-8 bytes. A backend
 * parses the attribute, so a long conversation is cut inside a text part, on a code point boundary, never
 * in the serialized JSON (which left an unterminated string, or half of a surrogate pair, that no backend
 * could read). The part where the cut falls says `truncated: true` (the conventions' parts allow more
 * properties); the parts and messages after it are left out.
 *
 * @module
 */
import { utf8Length } from "../encoding/utf8_length.ts";
import type { ChatRequest } from "../openai/types.ts";

/**
 * One part of a message: `text` or `reasoning` with its `content` (cut to fit), or another type whose content is
 * kept whole or left out.
 */
export interface CapturedPart {
  readonly type: string;
  readonly content?: unknown;
  readonly truncated?: true;
}

/** A message as the conventions capture it: a role and its parts. */
export interface CapturedMessage {
  readonly role: string;
  readonly parts: readonly CapturedPart[];
}

/** The part types whose `content` is text, cut where the budget ends: the answer's text, the model's reasoning. */
const CUT_TYPES: ReadonlySet<string> = new Set(["text", "reasoning"]);

/** `,"truncated":true`: what marking the last part kept may add, so the budget keeps room for it. */
const MARK_BYTES = 17;

/**
 * `messages` as JSON of at most `maxBytes` UTF-8 bytes (or `[]` when not even that fits), every string in them
 * (and every key) passed through `scrub` first.
 */
export function capturedJson(
  messages: readonly CapturedMessage[],
  maxBytes: number,
  scrub: (text: string) => string,
): string {
  const scrubbed = scrubDeep(messages, scrub) as CapturedMessage[];
  const whole = JSON.stringify(scrubbed);
  if (utf8Length(whole) <= maxBytes) return whole;
  const budget = maxBytes - MARK_BYTES;
  const kept: { role: string; parts: CapturedPart[] }[] = [];
  let used = 2; // []
  for (const message of scrubbed) {
    const shell = { ...message, parts: [] as CapturedPart[] };
    const shellCost = utf8Length(JSON.stringify(shell)) + (kept.length > 0 ? 1 : 0);
    if (used + shellCost > budget) break;
    kept.push(shell);
    used += shellCost;
    for (const part of message.parts) {
      const comma = shell.parts.length > 0 ? 1 : 0;
      const cost = utf8Length(JSON.stringify(part)) + comma;
      if (used + cost <= budget) {
        shell.parts.push(part);
        used += cost;
        continue;
      }
      const cut = typeof part.content === "string" && CUT_TYPES.has(part.type)
        ? cutToFit(
          part.content,
          (content) => utf8Length(JSON.stringify({ ...part, content, truncated: true })) + comma,
          maxBytes - used,
        )
        : undefined;
      if (cut !== undefined) {
        shell.parts.push({ ...part, content: cut, truncated: true });
        return JSON.stringify(kept);
      }
      // Nothing of this message fits: it is left out whole, and the part before it says the rest is missing.
      if (shell.parts.length === 0) kept.pop();
      return JSON.stringify(markLast(kept));
    }
  }
  return JSON.stringify(markLast(kept));
}

/** `kept` with its last part marked `truncated` (the budget left room for the mark). */
function markLast(kept: { role: string; parts: CapturedPart[] }[]) {
  const parts = kept.at(-1)?.parts;
  const last = parts?.at(-1);
  if (parts !== undefined && last !== undefined) parts[parts.length - 1] = { ...last, truncated: true };
  return kept;
}

/**
 * The longest prefix of `text`, ending on a code point boundary, whose `cost` is within `budget`; undefined
 * when not even the empty one fits. A UTF-16 unit is at least one UTF-8 byte, so no prefix longer than
 * `budget` units can fit and the search stays within the budget, however long the text.
 */
function cutToFit(text: string, cost: (prefix: string) => number, budget: number): string | undefined {
  const prefix = (units: number) => {
    const code = text.charCodeAt(units - 1);
    return text.slice(0, units > 0 && code >= 0xd800 && code <= 0xdbff ? units - 1 : units);
  };
  if (cost("") > budget) return undefined;
  let low = 0;
  let high = Math.min(text.length, Math.max(0, budget));
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (cost(prefix(mid)) <= budget) low = mid;
    else high = mid - 1;
  }
  return prefix(low);
}

/** `value` with every string, and every object key, scrubbed. */
function scrubDeep(value: unknown, scrub: (text: string) => string): unknown {
  if (typeof value === "string") return scrub(value);
  if (Array.isArray(value)) return value.map((item) => scrubDeep(item, scrub));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [scrub(key), scrubDeep(item, scrub)]),
    );
  }
  return value;
}

/** A request's chat form as GenAI "parts" messages (text parts; other content as a JSON part). */
export function inputMessages(chat: ChatRequest): CapturedMessage[] {
  return chat.messages.map((message) => {
    const content = message.content;
    const parts = typeof content === "string"
      ? [{ type: "text", content }]
      : Array.isArray(content)
      ? content.map((part) =>
        typeof part === "object" && part !== null && (part as { type?: unknown }).type === "text"
          ? { type: "text", content: (part as { text?: unknown }).text }
          : { type: "generic", content: part }
      )
      : [];
    return { role: message.role, parts };
  });
}
