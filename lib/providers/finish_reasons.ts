/**
 * How a vendor's own stop reason reads as the chat form's `finish_reason`: one table per vendor, read by its
 * provider (a translated answer's `finish_reason`), by the client API that passes the vendor's answers through
 * (what a traced pass-through answer reports) and by that API's cache spec (whether the answer was cut off,
 * `cutOff` in lib/cache/opt_ins.ts, for the response cache's opt-ins). So every path says the same of the same
 * answer: one cut off on its native path is cut off on every translated one, and its client is told so.
 *
 * The chat form's finish reasons are a closed set (`stop`, `length`, `tool_calls`, `content_filter`,
 * `function_call`; a client that validates them, as pydantic-ai does, refuses any other), and `stop` says the
 * model finished. A vendor reason that does not say so is never `stop`: it is `length` when the turn can be
 * continued (sent back, the model goes on, as after its output limit) and `content_filter` when the vendor
 * withheld or ended the output. A reason the table does not know yet is not known to be finished either: it is
 * read as the vendor's own pass-through path reads it, not whole.
 *
 * @module
 */

/**
 * Anthropic `stop_reason` → `finish_reason`: `end_turn` and `stop_sequence` finished (`stop`), `tool_use` hands
 * the client calls (`tool_calls`), `refusal` is the closest thing to a content filter. The rest did not finish,
 * and sent back the turn goes on: `max_tokens` and `model_context_window_exceeded` (limits), `pause_turn` (the
 * server-side loop of a server tool, a web search, paused a long turn: Anthropic's handling guide has the client
 * send the paused answer back as it is to continue it) and a reason unknown today → `length`. Told `stop`, a
 * client would take a paused turn's opening ("Let me search for that.") as the answer, and the response cache
 * would keep it as one. No stop reason at all (a message that says none) → `stop`.
 */
export function anthropicFinishReason(stopReason: unknown): string {
  switch (stopReason) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool_calls";
    case "refusal":
      return "content_filter";
    default:
      return typeof stopReason === "string" ? "length" : "stop";
  }
}

/** Gemini finish reasons of a function call nobody can run. */
const GEMINI_BROKEN_CALL: ReadonlySet<string> = new Set([
  "MALFORMED_FUNCTION_CALL",
  "UNEXPECTED_TOOL_CALL",
  "TOO_MANY_TOOL_CALLS",
]);

/**
 * Gemini `finishReason` → `finish_reason`: STOP → `tool_calls` when the candidate called a function (Gemini
 * says STOP for them), else `stop`; MAX_TOKENS → `length`; an unusable function call → `broken_call` (no chat
 * finish reason says it: the provider answers it with a 502). Every other reason ended the candidate before
 * the model finished, and → `content_filter` (the output was withheld or stopped by the service): the filters
 * (SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, LANGUAGE and the IMAGE_* ones), NO_IMAGE, OTHER
 * (Google's "unknown reason", which LiteLLM reads as `content_filter` too), FINISH_REASON_UNSPECIFIED and a
 * reason unknown today.
 */
export function geminiFinishReason(reason: string, calledFunction: boolean): string {
  if (reason === "STOP") return calledFunction ? "tool_calls" : "stop";
  if (reason === "MAX_TOKENS") return "length";
  if (GEMINI_BROKEN_CALL.has(reason)) return "broken_call";
  return "content_filter";
}

/**
 * Bedrock Converse `stopReason` → `finish_reason`, for the reasons that leave a usable answer (the documented
 * `malformed_tool_use` and `malformed_model_output` do not: the Bedrock provider answers them with a 502 before
 * asking this). Converse names Claude's reasons as Anthropic does (`end_turn`, `stop_sequence`, `tool_use`,
 * `max_tokens`, `model_context_window_exceeded`) and adds its own two for withheld output
 * (`guardrail_intervened`, `content_filtered`: `content_filter`); the rest is read as Anthropic's table reads it,
 * a reason unknown today included (Converse mostly fronts Claude, whose newer reasons, such as `pause_turn`, did
 * not finish): `length`, never `stop`, so neither the client nor the response cache takes a cut-off turn as whole.
 * No stop reason at all → `stop`.
 */
export function converseFinishReason(stopReason: unknown): string {
  return stopReason === "guardrail_intervened" || stopReason === "content_filtered"
    ? "content_filter"
    : anthropicFinishReason(stopReason);
}
