/**
 * A chat history as Claude's translations send it (Anthropic's Messages API, `../anthropic/request.ts`, and
 * Converse, `../bedrock/request.ts`), as far as thinking cares: which turn is sent last, and whether the last
 * assistant turn calls tools. Both translations move system and developer messages into `system`, leave out
 * text that is blank and a message left with nothing to send, and merge neighbouring turns of one role, so the
 * last chat message the client wrote is not always the last turn sent. The parameter rules
 * (`./thinking_budget.ts`) and both translations ask this one module, so that what the rules judge is what goes.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/**
 * Whether `text` can be a text block: Anthropic and Converse both refuse one that is empty or only whitespace
 * ("text content blocks must contain non-whitespace text"). Such text says nothing to the model, so it is left
 * out, and a message left with no blocks is left out too.
 */
export const hasText = (text: string): boolean => text.trim() !== "";

/** The text of a `text` or `refusal` content part (its `text` or `refusal` field), or undefined. */
export function partText(part: JsonObject): unknown {
  if (part.type === "text") return part.text;
  if (part.type === "refusal") return part.refusal;
  return undefined;
}

/**
 * Whether a message's content gives the translations a block: non-blank text, or an image part. (Parts the
 * translations refuse make the request a 400, so what they count as here does not matter.)
 */
function contentSent(content: unknown): boolean {
  if (typeof content === "string") return hasText(content);
  if (!Array.isArray(content)) return false;
  return content.some((part) => {
    if (!isObject(part)) return false;
    if (part.type === "image_url") return true;
    const text = partText(part);
    return typeof text === "string" && hasText(text);
  });
}

/** One turn as sent: its role, and whether it calls tools (`tool_use` / `toolUse` blocks). */
interface SentTurn {
  role: "user" | "assistant";
  callsTools: boolean;
}

/**
 * The turns sent for chat `messages`: system and developer messages go to `system`; a tool result is always a
 * user turn; a user or assistant message with no block to send (blank text, no tool calls) is left out; a turn
 * of the same role as the one before is merged into it.
 */
function sentTurns(messages: readonly unknown[]): SentTurn[] {
  const turns: SentTurn[] = [];
  for (const m of messages) {
    if (!isObject(m)) continue;
    const role = m.role === "assistant"
      ? "assistant"
      : m.role === "user" || m.role === "tool"
      ? "user"
      : null;
    if (role === null) continue;
    const callsTools = role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0;
    if (m.role !== "tool" && !callsTools && !contentSent(m.content)) continue;
    const last = turns.at(-1);
    if (last?.role === role) last.callsTools ||= callsTools;
    else turns.push({ role, callsTools });
  }
  return turns;
}

/**
 * Whether the chat `messages` leave Claude's thinking off, judged on the turns sent: the last turn is the
 * assistant's (a prefill to continue), or the last assistant turn calls tools (a tool loop under way). With
 * thinking on, Claude requires either turn to start with a signed thinking block ("a final assistant message
 * must start with a thinking block"), which OpenAI clients never send back.
 */
export function claudeHistoryLeavesThinkingOff(messages: readonly unknown[]): boolean {
  const turns = sentTurns(messages);
  if (turns.at(-1)?.role === "assistant") return true;
  return turns.findLast((t) => t.role === "assistant")?.callsTools === true;
}
