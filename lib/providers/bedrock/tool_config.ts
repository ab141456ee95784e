/**
 * OpenAI `tools` / `tool_choice` (and a JSON `response_format`'s answer tool) → Converse's `toolConfig`. Pure.
 *
 * Converse refuses `toolUse` / `toolResult` blocks in a request without a `toolConfig` ("The toolConfig field
 * must be defined when using toolUse and toolResult content blocks"), so whenever the history holds such blocks
 * some tools are declared: the client's, or, when it sent none, the ones the history calls
 * (`../shared/history_tools.ts`).
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

/** A Converse `toolConfig`: its tool entries (`toolSpec`s, and the `cachePoint`s after marked ones) and choice. */
export interface ToolConfig extends JsonObject {
  tools: JsonObject[];
  toolChoice?: JsonObject;
}

/** The part of a Converse turn read here: its content blocks. */
interface Turn {
  content: readonly JsonObject[];
}

function hasToolBlocks(turns: readonly Turn[]): boolean {
  return turns.some((t) => t.content.some((b) => "toolUse" in b || "toolResult" in b));
}

/**
 * The tools a history calls, for a request whose client sent none: each with any input and a description that
 * says it is not available now. Converse has no tool choice that forbids a call, so none is sent, and a model
 * that calls one anyway returns a call of a tool the client did not offer.
 */
function historySpecs(turns: readonly Turn[]): JsonObject[] {
  const names = turns.flatMap((t) =>
    t.content.flatMap((b) => isObject(b.toolUse) ? [String(b.toolUse.name)] : [])
  );
  return historyTools(names).map((t) => ({
    toolSpec: { name: t.name, description: t.description, inputSchema: { json: t.schema } },
  }));
}

/**
 * `toolConfig` for OpenAI `tools` / `tool_choice`. Converse has no "none": with `tool_choice: "none"` the tools
 * are left out — unless the history holds tool blocks, which Converse only accepts with a `toolConfig`; then
 * the tool specs are sent without a choice (the model decides), the closest Converse can express. A history
 * with tool blocks and no client tools gets the history's tools ({@linkcode historySpecs}).
 *
 * With a JSON `response_format` (`answer`), the answer tool is added and forced as `answerChoice` says: alone,
 * with `{any: {}}` (with one tool the same as naming it, and AWS documents `{tool: …}` for Claude and Nova only); beside
 * the client's tools, `{any: {}}` (some tool, the client's or the answer), or `{tool: …}` for `"none"` when the
 * client's tools must stay for the history.
 */
export function toToolConfig(
  request: ChatRequest,
  turns: readonly Turn[],
  answer: JsonAnswerTool | null = null,
  answerChoice: JsonAnswerChoice = "client",
): ToolConfig | undefined {
  const tools = Array.isArray(request.tools) ? request.tools : [];
  refuseReservedToolName(tools, "Bedrock");
  const choice = request.tool_choice;
  const specs = tools.map((tool, i) => {
    if (!isObject(tool) || tool.type !== "function" || !isObject(tool.function)) {
      throw invalidRequest(
        "Only tools of type 'function' are supported by Bedrock models.",
        `tools[${i}].type`,
      );
    }
    const fn = tool.function;
    const spec: JsonObject = {
      name: fn.name,
      inputSchema: { json: isObject(fn.parameters) ? fn.parameters : { type: "object", properties: {} } },
    };
    if (typeof fn.description === "string" && fn.description !== "") spec.description = fn.description;
    // Its prompt-caching marker, noted for `./cache_points.ts` (a `cachePoint` after it, when it is sent).
    return markBlock({ toolSpec: spec }, tool, `tools[${i}].cache_control`);
  });
  if (answer !== null && answerChoice !== "client") {
    const answerSpec = {
      toolSpec: { name: answer.name, description: answer.description, inputSchema: { json: answer.schema } },
    };
    const keep = answerChoice === "any" || hasToolBlocks(turns) ? specs : [];
    return {
      tools: [...keep, answerSpec],
      toolChoice: keep.length > 0 && answerChoice === "answer"
        ? { tool: { name: answer.name } }
        : { any: {} },
    };
  }
  if (specs.length === 0) return hasToolBlocks(turns) ? { tools: historySpecs(turns) } : undefined;
  if (choice === "none") return hasToolBlocks(turns) ? { tools: specs } : undefined;
  const config: ToolConfig = { tools: specs };
  if (choice === "required") config.toolChoice = { any: {} };
  else if (choice === "auto" || choice === undefined || choice === null) config.toolChoice = { auto: {} };
  else if (isObject(choice) && isObject(choice.function) && typeof choice.function.name === "string") {
    config.toolChoice = { tool: { name: choice.function.name } };
  } else {
    throw invalidRequest(
      "tool_choice must be 'none', 'auto', 'required' or a named function.",
      "tool_choice",
    );
  }
  return config;
}
