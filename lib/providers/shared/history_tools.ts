/**
 * Tools declared for a conversation's history, for a request that declares none of its own. OpenAI takes
 * tool calls and tool results in `messages` without `tools` (what a coding agent sends to have a session
 * summarized: opencode's compaction, for one), but Anthropic refuses `tool_use` / `tool_result` blocks in a
 * request without `tools`, and Bedrock's Converse refuses `toolUse` / `toolResult` blocks without a
 * `toolConfig`. Leaving the history out would change what the model reads; so the tools the history calls are
 * declared, with a schema that takes any input (their real schemas are not in the request), and a description
 * that tells the model they are not available now. The request's tool choice keeps them from being called where
 * the vendor has a way to say so (Anthropic's `none`; Converse has none).
 *
 * Gemini needs nothing of the kind: it takes `functionCall` / `functionResponse` parts without tools (Google's
 * own Gemini CLI sends its history so, without tools, to have it summarized).
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";

/** One tool declared for the history's sake. */
export interface HistoryTool {
  name: string;
  description: string;
  /** Any JSON object: the tool's own schema is not in the request. */
  schema: JsonObject;
}

/** The tool declared when the history holds tool results but no call naming a tool (its calls were cut). */
export const HISTORY_PLACEHOLDER_TOOL = "earlier_tool";

/** What the model is told about each. */
export const HISTORY_TOOL_DESCRIPTION =
  "Used earlier in this conversation; not available in this request. Do not call it.";

/** The tool names both vendors accept; a name outside them would make the declaration itself refused. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The tools to declare for a history whose calls name `names` (in order, each once), or the placeholder when
 * none is a name a tool can have.
 */
export function historyTools(names: Iterable<string>): HistoryTool[] {
  const unique = [...new Set([...names].filter((name) => TOOL_NAME.test(name)))];
  if (unique.length === 0) unique.push(HISTORY_PLACEHOLDER_TOOL);
  return unique.map((name) => ({ name, description: HISTORY_TOOL_DESCRIPTION, schema: { type: "object" } }));
}

/**
 * Refuses an assistant turn's tool call that is not a function call (a custom tool's call, `{type: "custom",
 * custom: {name, input}}`) for a vendor with function tools only. These adapters refuse a custom tool in `tools`,
 * so its call in the history is refused alike (400 at the call's `type`): read as a function call it would go
 * upstream as a call of a tool named "undefined", or be left out of the history without a word.
 */
/** `at` is the message's param: `messages[1]`. */
export function refuseNonFunctionCalls(toolCalls: unknown, at: string, vendor: string): void {
  if (!Array.isArray(toolCalls)) return;
  toolCalls.forEach((call, j) => {
    if (!isObject(call) || call.type === "function") return;
    throw invalidRequest(
      `Tool calls of type '${String(call.type)}' are not supported by ${vendor} models.`,
      `${at}.tool_calls[${j}].type`,
      "unsupported_parameter",
    );
  });
}
