/**
 * Reasoning from OpenAI-compatible servers in the gateway's one chat form ({@linkcode ReasoningFields}):
 * DeepSeek and older vLLM send `reasoning_content`; newer vLLM, Ollama, Groq and OpenRouter send the same text
 * as `reasoning`. Both arrive as `reasoning_content`, so clients and the Responses translation read one name.
 *
 * @module
 */
import type { JsonObject, ReasoningFields } from "../../openai/types.ts";

/**
 * True when `fields` (a message or a delta) needs {@linkcode normalizeReasoning}: it has `reasoning`, or a
 * `reasoning_content` that is neither a string nor null. Cheap enough for every streamed delta; the common
 * chunk (no reasoning at all) costs two property reads.
 */
export function needsReasoningFix(fields: JsonObject): boolean {
  const own = fields.reasoning_content;
  return fields.reasoning !== undefined ||
    (own !== undefined && own !== null && typeof own !== "string");
}

/**
 * Rewrites `fields` in place: `reasoning` becomes `reasoning_content` (unless that is already there; `reasoning`
 * is cleared either way), and a value that is not a string is left out: upstream output is untrusted and a
 * strict client must not meet an object where the convention promises text. `null` stays `null`. Fields are
 * cleared by setting them `undefined`, which `JSON.stringify` leaves out, rather than by `delete`, which would
 * turn the object into a slow dictionary-mode object on this per-chunk path.
 */
export function normalizeReasoning(fields: JsonObject & ReasoningFields): void {
  const alias = fields.reasoning;
  if (alias !== undefined) {
    fields.reasoning = undefined;
    if (
      (fields.reasoning_content === undefined || fields.reasoning_content === null) &&
      typeof alias === "string"
    ) {
      fields.reasoning_content = alias;
    }
  }
  const own: unknown = fields.reasoning_content;
  if (own !== undefined && own !== null && typeof own !== "string") fields.reasoning_content = undefined;
}
