/**
 * The tool calls of a stored conversation the model never finished: a `function_call` or `custom_tool_call`
 * stored with status `incomplete` (or `in_progress`), its arguments cut off (`{"city": "Par`) by a failed
 * stream or a length stop. No client can answer such a call, and no vendor takes it back: a chat target's
 * upstream refuses an assistant `tool_calls` entry that no tool result follows, Claude and Gemini need its
 * arguments as JSON. Rebuilding a conversation for `previous_response_id` leaves such a call out, with any
 * output sent for its `call_id`, on every target alike, and the answer names each left-out item in
 * `x-gateway-dropped` (`previous_response_id:fc_…`, by its stored id, else its call id): named, never refused,
 * since a `strict` alias refusing it would end every later turn of the conversation.
 *
 * @module
 */
import type { JsonObject } from "../../openai/types.ts";
import type { Conversation } from "../../usage/responses_store.ts";
import type { ResponsesRequest } from "./request.ts";

/** The call items whose arguments the model may not have finished. */
const CALLS = new Set(["function_call", "custom_tool_call"]);
/** The output items that answer a call, by its `call_id`. */
const OUTPUTS = new Set(["function_call_output", "custom_tool_call_output"]);
/** A call stored with one of these statuses was never finished. */
const UNFINISHED = new Set(["incomplete", "in_progress"]);

/** Whether `item` is a tool call the model never finished. */
export function isCutCall(item: JsonObject): boolean {
  return CALLS.has(String(item.type)) && UNFINISHED.has(String(item.status));
}

/** What a conversation goes without: the cut calls' ids, and how each left-out item is named. */
export interface CutCalls {
  conversation: Conversation;
  /** The `call_id`s of the calls left out: an output the request itself sends for one is left out too. */
  callIds: Set<string>;
  /** Each left-out item as `x-gateway-dropped` names it. */
  dropped: string[];
}

/** `conversation` without its cut calls and the outputs sent for them (`nativeBy` kept in step). */
export function withoutCutCalls(conversation: Conversation): CutCalls {
  const callIds = new Set<string>();
  for (const item of conversation.items) {
    if (isCutCall(item) && typeof item.call_id === "string") callIds.add(item.call_id);
  }
  const dropped: string[] = [];
  const keep = conversation.items.map((item) => {
    const cut = isCutCall(item) ||
      (OUTPUTS.has(String(item.type)) && typeof item.call_id === "string" && callIds.has(item.call_id));
    if (cut) dropped.push(`previous_response_id:${String(item.id ?? item.call_id ?? item.type)}`);
    return !cut;
  });
  if (dropped.length === 0) return { conversation, callIds, dropped };
  return {
    conversation: {
      ...conversation,
      items: conversation.items.filter((_, i) => keep[i]),
      nativeBy: conversation.nativeBy.filter((_, i) => keep[i]),
    },
    callIds,
    dropped,
  };
}

/**
 * Leaves out of `parsed`'s chat form the tool results its own input sends for the cut calls `callIds` (a
 * translated target would get a result for a call it never saw), each named by its param (`input[1]`), in order.
 */
export function dropOutputsFor(
  parsed: ResponsesRequest,
  callIds: ReadonlySet<string>,
): string[] {
  const dropped: string[] = [];
  const messages = parsed.chat.messages;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message.role !== "tool" || !callIds.has(String(message.tool_call_id))) continue;
    const param = parsed.messageParams[i];
    dropped.push(/^input\[\d+\]/.exec(param)?.[0] ?? param);
    messages.splice(i, 1);
    parsed.messageParams.splice(i, 1);
  }
  return dropped.reverse();
}
