/**
 * Anthropic's Message object built from the chat form: a whole `ChatCompletion` for a non-streamed answer,
 * and the pieces a stream's events carry (stop reason, usage). The alias is the `model`.
 *
 * - Content comes in Claude's order: `thinking` (the chat form's `reasoning_content`), `text`, `tool_use`
 *   (arguments parsed to `input`; `{}` for a call `max_tokens` cut off). A translated thinking block's
 *   `signature` is `""`: there is no Claude signature to give, and a made-up one would be rejected by Claude
 *   later.
 * - `finish_reason` → `stop_reason`: `stop` → `end_turn` (or `stop_sequence` when the upstream says which of
 *   the request's `stop_sequences` matched, as vLLM's `stop_reason` does; the chat form itself does not say),
 *   `length` → `max_tokens`, `tool_calls` / `function_call` → `tool_use`, `content_filter` → `refusal`; an
 *   answer holding a tool call stops with `tool_use` unless cut off (`length`) or filtered, whatever else its
 *   finish reason says (Gemini's OpenAI-compatible endpoint streams calls with `stop`). No finish reason at all is
 *   the upstream's fault ({@linkcode noFinishReason}).
 * - `usage`: `input_tokens` is the prompt less cache reads and writes (Anthropic counts them apart),
 *   `cache_read_input_tokens` / `cache_creation_input_tokens` from `prompt_tokens_details`.
 *
 * @module
 */
import { badGateway, type GatewayError } from "../../errors.ts";
import { tokenClassesOf } from "../../pricing/cost.ts";
import type { ChatCompletion, JsonObject, ReasoningFields, Usage } from "../../openai/types.ts";

/** `msg_` / `toolu_` followed by 24 random base-62 characters, like Anthropic's ids. */
export function newId(prefix: string): string {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return prefix + Array.from(bytes, (b) => alphabet[b % 62]).join("");
}

/** Anthropic's usage object. */
export interface MessagesUsage extends JsonObject {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}

/** The chat usage in Anthropic's terms. */
export function messagesUsage(usage: Usage): MessagesUsage {
  // The chat form's classes as the gateway reads them everywhere (its cache writes are by lifetime).
  const classes = tokenClassesOf(usage.prompt_tokens, usage.completion_tokens, usage);
  const read = count(classes.cachedRead);
  const written = count(classes.cacheWrite5m) + count(classes.cacheWrite1h);
  return {
    input_tokens: Math.max(0, count(usage.prompt_tokens) - read - written),
    output_tokens: count(usage.completion_tokens),
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
  };
}

/**
 * The stop reason and matched stop sequence of a chat choice's ending. An answer holding a tool call
 * (`usedTools`) stops with `tool_use` whatever its finish reason says, but for `length` and `content_filter`:
 * Anthropic never ends a tool_use with `end_turn`, and the SDKs' tool runners and agents like Claude Code run
 * the tools only on `tool_use`, while Gemini's OpenAI-compatible endpoint ends a streamed call with `stop`.
 */
export function stopOf(
  finishReason: unknown,
  matched: unknown,
  stopSequences: readonly string[],
  usedTools = false,
): { stop_reason: string; stop_sequence: string | null } {
  switch (finishReason) {
    case "length":
      return { stop_reason: "max_tokens", stop_sequence: null };
    case "tool_calls":
    case "function_call":
      return { stop_reason: "tool_use", stop_sequence: null };
    case "content_filter":
      return { stop_reason: "refusal", stop_sequence: null };
    default:
      if (usedTools) return { stop_reason: "tool_use", stop_sequence: null };
      if (typeof matched === "string" && stopSequences.includes(matched)) {
        return { stop_reason: "stop_sequence", stop_sequence: matched };
      }
      return { stop_reason: "end_turn", stop_sequence: null };
  }
}

/**
 * The upstream's fault of an answer that gave no finish reason (an OpenAI-compatible server's whole answer, or
 * its stream's last chunk before `[DONE]`, with `finish_reason` null or absent): it is not known to have
 * finished, and Anthropic's stop reasons have none that says so. `end_turn` would tell the client, and a
 * response cache, that the answer is whole; `max_tokens` that a limit was reached. A whole answer is a 502
 * `api_error`, a stream ends with an `error` event instead of `message_stop`, as a stream cut short does.
 */
export function noFinishReason(provider: string): GatewayError {
  return badGateway(
    `Provider "${provider}" ended its answer without a finish reason; it is not known to be complete.`,
  );
}

/**
 * A tool call's JSON arguments as a `tool_use` block's `input`. Arguments that are not a JSON object are the
 * upstream's fault (a 502) on a finished answer; on an answer `cutOff` by `max_tokens` they are the expected
 * half of a call, so the block gets what parses (`{}` when the object is incomplete) and the Message says
 * `max_tokens`, as Anthropic's own does and as the streamed path already gives it.
 */
export function toolInput(args: string, provider: string, cutOff = false): JsonObject {
  if (args.trim() === "") return {};
  try {
    const value = JSON.parse(args);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as JsonObject;
  } catch {
    // Reported below.
  }
  if (cutOff) return {};
  throw badGateway(`Provider "${provider}" gave tool call arguments that are not a JSON object.`);
}

/** What a Message is built around: its id, the alias, and the request's stop sequences. */
export interface MessageFrame {
  id: string;
  alias: string;
  stopSequences: readonly string[];
  provider: string;
}

/** A Message object (`content` and the ending given), as the stream's `message_start` and the JSON answer. */
export function messageObject(
  frame: MessageFrame,
  content: JsonObject[],
  stop: { stop_reason: string | null; stop_sequence: string | null },
  usage: MessagesUsage,
): JsonObject {
  return {
    id: frame.id,
    type: "message",
    role: "assistant",
    model: frame.alias,
    content,
    stop_reason: stop.stop_reason,
    stop_sequence: stop.stop_sequence,
    usage,
  };
}

/** A whole completion as a Message. */
export function completionToMessage(
  completion: ChatCompletion,
  frame: MessageFrame,
  usage: Usage,
): JsonObject {
  const choice = (completion.choices[0] ?? {}) as JsonObject;
  const message = (choice.message ?? {}) as JsonObject & ReasoningFields;
  const content: JsonObject[] = [];
  if (typeof message.reasoning_content === "string" && message.reasoning_content !== "") {
    content.push({ type: "thinking", thinking: message.reasoning_content, signature: "" });
  }
  if (typeof message.content === "string" && message.content !== "") {
    content.push({ type: "text", text: message.content });
  }
  if (typeof message.refusal === "string" && message.refusal !== "") {
    content.push({ type: "text", text: message.refusal });
  }
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls as JsonObject[] : [];
  const cutOff = choice.finish_reason === "length";
  for (const call of calls) {
    const fn = (call.function ?? {}) as { name?: unknown; arguments?: unknown };
    content.push({
      type: "tool_use",
      id: typeof call.id === "string" && call.id !== "" ? call.id : newId("toolu_"),
      name: typeof fn.name === "string" ? fn.name : "",
      input: toolInput(typeof fn.arguments === "string" ? fn.arguments : "", frame.provider, cutOff),
    });
  }
  const refused = typeof message.refusal === "string" && message.refusal !== "";
  if (!refused && choice.finish_reason == null) throw noFinishReason(frame.provider);
  const stop = stopOf(
    refused ? "content_filter" : choice.finish_reason,
    choice.stop_reason,
    frame.stopSequences,
    calls.length > 0,
  );
  return messageObject(frame, content, stop, messagesUsage(usage));
}
