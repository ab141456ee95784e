/**
 * A Messages request's `tools` and `tool_choice` in the chat form.
 *
 * - A custom tool (`{name, description?, input_schema, cache_control?, strict?}`, `type` absent or
 *   `"custom"`) → a function tool with `input_schema` as its `parameters`.
 * - Anthropic's server and client tools (`web_search_…`, `bash_…`, `text_editor_…`, `computer_…`, an MCP
 *   connector's `mcp_toolset`, …) run at Anthropic: noted as what only a Claude target serves, their fields
 *   Anthropic's to judge (an `mcp_toolset` has no `name`).
 * - `tool_choice`: `auto` → `"auto"`, `any` → `"required"`, `tool` → the named function (one of the request's
 *   tools, else a 400, unless the request has MCP servers, whose tools only Anthropic knows), `none` →
 *   `"none"`; `disable_parallel_tool_use: true` → `parallel_tool_calls: false`. A choice that forces a tool the
 *   translation did not keep (a server tool, an MCP server's tool) becomes `auto`, noted as dropped.
 *
 * @module
 */
import { printable } from "../../errors.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { cacheMarker, type ContentNotes, extraFields } from "./content.ts";
import { booleanField, extraField, fieldError, stringField, wrongType } from "./validate.ts";

const TOOL_FIELDS = new Set(["type", "name", "description", "input_schema", "cache_control", "strict"]);

/**
 * One `tools` entry (at `path`: `tools.<i>`, or a tool change's `definition`) as a chat tool; null for a server
 * tool, which only a Claude target serves (noted).
 */
export function translateTool(tool: unknown, path: string, notes: ContentNotes): JsonObject | null {
  if (!isObject(tool)) throw wrongType(path, "an object", tool);
  if (tool.type !== undefined && tool.type !== null && tool.type !== "custom") {
    // A server tool (web search, code execution, an MCP toolset, …) runs at Anthropic: only a Claude target
    // serves it, and its fields are Anthropic's to judge (an MCP toolset has no `name`; a native target gets
    // the body as sent).
    notes.tolerance.native.push(`${path}`);
    return null;
  }
  const name = stringField(tool, "name", `${path}.name`, true)!;
  extraFields(tool, TOOL_FIELDS, path, notes);
  cacheMarker(tool, path, notes.tolerance);
  if (!isObject(tool.input_schema)) {
    throw wrongType(`${path}.input_schema`, "a valid dictionary", tool.input_schema);
  }
  const fn: JsonObject = { name, parameters: tool.input_schema };
  const description = stringField(tool, "description", `${path}.description`);
  if (description !== undefined) fn.description = description;
  const strict = booleanField(tool, "strict", `${path}.strict`);
  if (strict !== undefined) fn.strict = strict;
  return { type: "function", function: fn };
}

/** Sets `chat.tools` from the Messages `tools` (nothing for an empty list). */
export function translateTools(tools: unknown[], chat: ChatRequest, notes: ContentNotes): void {
  const out: JsonObject[] = [];
  tools.forEach((tool, i) => {
    const translated = translateTool(tool, `tools.${i}`, notes);
    if (translated !== null) out.push(translated);
  });
  if (out.length > 0) chat.tools = out;
}

/**
 * Sets `chat.tool_choice` (and `parallel_tool_calls`) from the Messages `tool_choice`, against the tools the
 * translation kept (`chat.tools`). A `tool` choice must name one of `declared` (the names in the request's
 * `tools`), as Anthropic requires: a translated target would otherwise ignore the choice or refuse it in its own
 * terms. Not when `mcpServers` (the request has `mcp_servers`): their tools, which the choice may name, are
 * listed only by the servers, at Anthropic, so a native target gets the choice as sent and Anthropic judges it.
 * A choice the kept tools cannot honour (a `tool` naming a server tool or an MCP server's tool, which a
 * translated target goes without; `any` when no tool is left) becomes the default, `auto`, and is noted as
 * dropped; with no tool left no choice is sent at all (OpenAI-compatible targets refuse a `tool_choice`
 * without `tools`).
 */
export function translateToolChoice(
  choice: unknown,
  chat: ChatRequest,
  declared: readonly unknown[],
  notes: ContentNotes,
  mcpServers = false,
): void {
  if (!isObject(choice)) throw wrongType("tool_choice", "an object", choice);
  const extra = extraField(choice, new Set(["type", "name", "disable_parallel_tool_use"]), "tool_choice");
  if (extra !== null) throw extra;
  const disable = booleanField(choice, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use");
  const kept = Array.isArray(chat.tools)
    ? (chat.tools as JsonObject[]).map((tool) => isObject(tool.function) ? tool.function.name : undefined)
    : [];
  /** Which tool the choice forces: `true` for any, its name for one, undefined for none. */
  let forces: string | true | undefined;
  let wanted: ChatRequest["tool_choice"];
  switch (choice.type) {
    case "auto":
      wanted = "auto";
      break;
    case "any":
      wanted = "required";
      forces = true;
      break;
    case "tool": {
      const name = stringField(choice, "name", "tool_choice.name", true)!;
      if (!mcpServers && !declared.includes(name)) {
        throw fieldError(
          "tool_choice.name",
          `The tool '${printable(name)}' is not one of the request's tools.`,
        );
      }
      wanted = { type: "function", function: { name } };
      forces = name;
      break;
    }
    case "none":
      wanted = "none";
      break;
    default:
      throw fieldError("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'.");
  }
  if (forces !== undefined && (forces === true ? kept.length === 0 : !kept.includes(forces))) {
    // The forced tool is one a translated target goes without (a server tool), or no tool is left to force.
    notes.tolerance.dropped.push("tool_choice");
    wanted = "auto";
  }
  // Without tools there is nothing to choose from, and OpenAI-compatible targets refuse the choice.
  if (kept.length > 0) chat.tool_choice = wanted;
  if (disable === true && chat.tools !== undefined) chat.parallel_tool_calls = false;
}
