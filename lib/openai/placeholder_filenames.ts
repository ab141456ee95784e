/**
 * The file names the gateway writes into the chat form where the client wrote none. A chat `file` part of inline
 * data needs a `filename` (OpenAI refuses one without), so a Messages `document` with no `title` becomes a file
 * named `document`, and a Gemini file (whose API has no name for one) a file named `file`. Such a name is no text
 * of the client's: the content rules and the input guardrails, which read a file's name as any text the model
 * reads (lib/policy/text_slots.ts), leave it alone, so a rule matching `document` cannot refuse a request that
 * never said it.
 *
 * Kept by the `file` object, not by the name: a client may name its file `document` too, and that name is its
 * own, judged as written. The chat form is judged as its client API built it (nothing copies it before the
 * policy and the guardrails read it), and the mark is no field, so no upstream is sent it.
 *
 * @module
 */
import type { JsonObject } from "./types.ts";

const PLACEHOLDERS = new WeakSet<JsonObject>();

/** `file` (a chat `file` part's `file`), marked as named by the gateway, not the client. */
export function placeholderNamed<T extends JsonObject>(file: T): T {
  PLACEHOLDERS.add(file);
  return file;
}

/** Whether `file`'s `filename` is one the gateway wrote ({@linkcode placeholderNamed}), so no text to judge. */
export function hasPlaceholderName(file: JsonObject): boolean {
  return PLACEHOLDERS.has(file);
}
