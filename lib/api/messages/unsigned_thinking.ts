/**
 * Thinking blocks no Claude can take back: those the gateway made from a translated target's reasoning, whose
 * `signature` is `""` (response.ts, stream.ts: there is no Claude signature to give). Claude Code keeps them in
 * its history and sends them back, and Anthropic (Claude on Bedrock too) refuses each one ("Invalid `signature`
 * in `thinking` block"), so a conversation that moved from a translated target to a Claude one (an alias's
 * fallback, or a user switching models mid-session) could not go on. A native target gets the body without
 * them: a thinking block whose signature is not a non-empty string (empty, as the gateway makes them, or
 * missing) is left out, and named by its path (`messages.1.content.0`). A signed block, and `redacted_thinking`
 * (Claude's encrypted thinking), go as sent.
 *
 * Claude with thinking on requires the last assistant turn to start with a thinking block when it calls tools or
 * is the final turn (a prefill) ("a final `assistant` message must start with a thinking block"). When the
 * body without the left-out blocks breaks that rule, thinking is turned off for the request (`thinking` left
 * out, and named), as the gateway's own Claude translations leave it off for a tool loop whose thinking they do not
 * have (lib/providers/shared/claude_history.ts); so are the `clear_thinking_…` context edits, which manage
 * thinking that is then off. A turn of such blocks alone is left out whole (Anthropic refuses an empty turn, and
 * joins the neighbouring user turns into one).
 *
 * These are named, never refused, not even by a `strict` alias: no Claude target could serve them, so a refusal
 * would end every conversation that ever passed through a translated target.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { isCallBlock } from "./call_blocks.ts";

/** A body without its unsigned thinking, and the client's paths of what it lost. */
export interface WithoutUnsigned {
  body: JsonObject;
  /** Empty when nothing was left out (then `body` is the client's own). */
  dropped: string[];
}

const unsigned = (block: unknown): boolean =>
  isObject(block) && block.type === "thinking" &&
  (typeof block.signature !== "string" || block.signature === "");

/** Whether a turn's blocks call tools (client, server or MCP tools). */
const callsTools = (blocks: readonly unknown[]): boolean => blocks.some(isCallBlock);

const startsWithThinking = (blocks: readonly unknown[]): boolean =>
  isObject(blocks[0]) && (blocks[0].type === "thinking" || blocks[0].type === "redacted_thinking");

/**
 * Whether `messages` meet Claude's rule for thinking: their last assistant turn starts with a thinking block
 * when it calls tools or is the final turn.
 */
function thinkingLeadKept(messages: readonly unknown[]): boolean {
  const at = messages.findLastIndex((t) => isObject(t) && t.role === "assistant");
  const turn = messages[at];
  if (!isObject(turn) || !Array.isArray(turn.content)) return true;
  if (!callsTools(turn.content) && at !== messages.length - 1) return true;
  return startsWithThinking(turn.content);
}

function thinkingOn(body: JsonObject): boolean {
  return isObject(body.thinking) && (body.thinking.type === "enabled" || body.thinking.type === "adaptive");
}

/** `body` without its `context_management.edits` that clear thinking; their paths go to `dropped`. */
function withoutThinkingEdits(body: JsonObject, dropped: string[]): void {
  const management = body.context_management;
  if (!isObject(management) || !Array.isArray(management.edits)) return;
  const clears = (edit: unknown) =>
    isObject(edit) && typeof edit.type === "string" && edit.type.startsWith("clear_thinking");
  if (!management.edits.some(clears)) return;
  const kept = management.edits.filter((edit, i) => {
    if (clears(edit)) dropped.push(`context_management.edits.${i}`);
    return !clears(edit);
  });
  if (kept.length === 0) delete body.context_management;
  else body.context_management = { ...management, edits: kept };
}

/**
 * `client` as a native target can take it: without its unsigned thinking blocks, and with thinking off when the
 * last assistant turn lost the thinking block it started with (see the module doc). The client's body itself
 * when it has none.
 */
export function withoutUnsignedThinking(client: JsonObject): WithoutUnsigned {
  const turns = client.messages;
  if (
    !Array.isArray(turns) ||
    !turns.some((t) => isObject(t) && Array.isArray(t.content) && t.content.some(unsigned))
  ) {
    return { body: client, dropped: [] };
  }
  const dropped: string[] = [];
  const messages: unknown[] = [];
  turns.forEach((turn, i) => {
    if (!isObject(turn) || !Array.isArray(turn.content) || !turn.content.some(unsigned)) {
      messages.push(turn);
      return;
    }
    const content = turn.content.filter((block, j) => {
      if (unsigned(block)) dropped.push(`messages.${i}.content.${j}`);
      return !unsigned(block);
    });
    if (content.length > 0) messages.push({ ...turn, content });
  });
  const body: JsonObject = { ...client, messages };
  if (thinkingOn(body) && !thinkingLeadKept(messages)) {
    delete body.thinking;
    dropped.push("thinking");
    withoutThinkingEdits(body, dropped);
  }
  return { body, dropped };
}
