/**
 * OpenAI `tools` / `tool_choice` / `parallel_tool_calls` (and a JSON `response_format`'s answer tool) →
 * Anthropic's `tools` and `tool_choice`. Pure.
 *
 * Anthropic refuses `tool_use` / `tool_result` blocks in a request without tools ("Requests which include
 * tool_use or tool_result blocks must define tools"), so a history with such blocks always declares some: the
 * client's, the answer tool, or, when there are neither, the ones the history calls, which `tool_choice: none`
 * keeps from being called (`../shared/history_tools.ts`).
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import {
  type JsonAnswerChoice,
  type JsonAnswerTool,
  refuseReservedToolName,
} from "../shared/json_answer_tool.ts";
import { historyTools } from "../shared/history_tools.ts";
import { markBlock } from "../shared/cache_control.ts";

/** The part of an Anthropic turn read here: its content. */
interface Turn {
  content: string | readonly JsonObject[];
}

/**
 * OpenAI function tools as Anthropic tools; other tool types, and the reserved answer tool's name, are refused.
 * A tool's prompt-caching marker (`tools[i].cache_control`) is noted on the tool made of it
 * (`../shared/cache_control.ts`), and written there if it is sent.
 */
export function toAnthropicTools(tools: unknown): JsonObject[] | undefined {
  if (!Array.isArray(tools)) return undefined;
  refuseReservedToolName(tools, "Anthropic");
  return tools.map((tool, i) => {
    if (!isObject(tool) || tool.type !== "function" || !isObject(tool.function)) {
      throw invalidRequest(
        `Tools of type '${String(isObject(tool) ? tool.type : tool)}' are not supported by Anthropic models.`,
        `tools[${i}].type`,
        "unsupported_parameter",
      );
    }
    const fn = tool.function;
    const out: JsonObject = {
      name: fn.name,
      input_schema: isObject(fn.parameters) ? fn.parameters : { type: "object", properties: {} },
    };
    if (typeof fn.description === "string") out.description = fn.description;
    return markBlock(out, tool, `tools[${i}].cache_control`);
  });
}

/** OpenAI `tool_choice` + `parallel_tool_calls` as Anthropic's `tool_choice`. */
function toAnthropicToolChoice(choice: unknown, parallel: unknown): JsonObject | undefined {
  let out: JsonObject | undefined;
  if (choice === "auto") out = { type: "auto" };
  else if (choice === "required") out = { type: "any" };
  else if (choice === "none") out = { type: "none" };
  else if (isObject(choice) && choice.type === "function" && isObject(choice.function)) {
    out = { type: "tool", name: choice.function.name };
  } else if (choice !== undefined && choice !== null) {
    throw invalidRequest(
      "This form of 'tool_choice' is not supported by Anthropic models; use 'auto', 'required', 'none' or " +
        "{type: 'function', function: {name}}.",
      "tool_choice",
      "unsupported_parameter",
    );
  }
  if (parallel === false && out?.type !== "none") {
    out = { ...(out ?? { type: "auto" }), disable_parallel_tool_use: true };
  }
  return out;
}

/**
 * The tool names the history's `tool_use` blocks call, or null when it holds no tool blocks at all. Anthropic
 * refuses tool blocks in a request without tools; see `../shared/history_tools.ts`.
 */
function historyToolNames(messages: readonly Turn[]): string[] | null {
  const blocks = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  if (!blocks.some((b) => b.type === "tool_use" || b.type === "tool_result")) return null;
  return blocks.filter((b) => b.type === "tool_use").map((b) => String(b.name));
}

/**
 * The request's `tools` and `tool_choice` (either may be absent): with a JSON `response_format` forced through
 * the answer tool (`answerChoice` other than `client`), the client's `tools` and the answer tool, forced; else
 * the client's tools and choice; else, for a history with tool blocks, the history's tools and `none`.
 */
export function toolFields(
  request: ChatRequest,
  messages: readonly Turn[],
  tools: JsonObject[],
  answer: JsonAnswerTool | null,
  answerChoice: JsonAnswerChoice,
): JsonObject {
  if (answer !== null && answerChoice !== "client") {
    // The client's tools stay (history with tool blocks needs them); the answer tool is added and forced.
    const choice: JsonObject = answerChoice === "answer"
      ? { type: "tool", name: answer.name }
      : { type: "any" };
    if (request.parallel_tool_calls === false) choice.disable_parallel_tool_use = true;
    return {
      tools: [...tools, { name: answer.name, description: answer.description, input_schema: answer.schema }],
      tool_choice: choice,
    };
  }
  if (tools.length > 0) {
    const choice = toAnthropicToolChoice(request.tool_choice, request.parallel_tool_calls);
    return choice === undefined ? { tools } : { tools, tool_choice: choice };
  }
  const names = historyToolNames(messages);
  if (names === null) return {};
  return {
    tools: historyTools(names).map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.schema,
    })),
    tool_choice: { type: "none" },
  };
}
