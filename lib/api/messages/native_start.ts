/**
 * When a Messages stream passed through from a native upstream (Anthropic, Claude on Bedrock) commits to its
 * target (lib/answer/stream_start.ts): at its first event past the preamble. `message_start`, `ping` and a
 * content block opened empty (Anthropic opens a text block with `""`, a thinking block with `thinking: ""`)
 * show nothing of the answer yet, and Anthropic reports an overload as an `error` event right after
 * `message_start`: held, so that error is the attempt's, retried and fallen back from like a 529. Any other
 * event (a delta, a tool call's block, a `message_delta`, `message_stop`, a type Anthropic adds later) commits.
 *
 * @module
 */
import type { StreamStart } from "../../answer/stream_start.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { promptClasses, type ReportedPrompt } from "../../openai/reported_prompt.ts";
import { readMessagesUsage, usageTokens } from "./native.ts";

/** Whether a Messages stream event shows the client something of the answer. */
export function messagesEventShows(event: JsonObject): boolean {
  if (event.type === "message_start" || event.type === "ping") return false;
  if (event.type !== "content_block_start") return true;
  const block = event.content_block;
  if (!isObject(block)) return true;
  if (block.type === "text") return block.text !== "";
  if (block.type === "thinking") return block.thinking !== "";
  return true;
}

/** The prompt `message_start` reports (its input with the cache reads and writes, by class), if it is one. */
function messageStartPrompt(event: JsonObject): ReportedPrompt | undefined {
  if (event.type !== "message_start" || !isObject(event.message)) return undefined;
  const usage = readMessagesUsage(event.message.usage);
  return usage && promptClasses(usageTokens(usage));
}

/** How a native Messages stream commits, and what its held `message_start` says the prompt cost. */
export const MESSAGES_START: StreamStart<JsonObject> = {
  shows: messagesEventShows,
  prompt: messageStartPrompt,
};
