/**
 * How a vendor's own stop reason reads as the chat form's `finish_reason`: one table per vendor, read by its
 * provider (a translated answer's `finish_reason`) and by the client API that passes the vendor's answers
 * through (what a traced pass-through answer reports), so both say the same of the same answer.
 *
 * @module
 */

/**
 * Anthropic `stop_reason` → `finish_reason`. `pause_turn` (a server tool paused a long turn) is a normal stop
 * for an OpenAI client; `refusal` is the closest thing to a content filter; an unknown future reason is
 * `stop` rather than something that breaks strict clients.
 */
export function anthropicFinishReason(stopReason: unknown): string {
  switch (stopReason) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return "stop";
  }
}

/** Gemini finish reasons of a candidate the model declined to produce (the chat form's `content_filter`). */
const GEMINI_FILTERED: ReadonlySet<string> = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "LANGUAGE",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
]);

/** Gemini finish reasons of a function call nobody can run. */
const GEMINI_BROKEN_CALL: ReadonlySet<string> = new Set([
  "MALFORMED_FUNCTION_CALL",
  "UNEXPECTED_TOOL_CALL",
  "TOO_MANY_TOOL_CALLS",
]);

/**
 * Gemini `finishReason` → `finish_reason`: MAX_TOKENS → `length`; the filters → `content_filter`; an unusable
 * function call → `broken_call` (no chat finish reason says it: the provider answers it with a 502); STOP and
 * anything else → `tool_calls` when the candidate called a function (Gemini says STOP for them), else `stop`.
 */
export function geminiFinishReason(reason: string, calledFunction: boolean): string {
  if (reason === "MAX_TOKENS") return "length";
  if (GEMINI_FILTERED.has(reason)) return "content_filter";
  if (GEMINI_BROKEN_CALL.has(reason)) return "broken_call";
  return calledFunction ? "tool_calls" : "stop";
}
