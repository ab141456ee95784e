/**
 * A Messages request's `tools` and `tool_choice` in the chat form.
 *
 * - A custom tool (`{name, description?, input_schema, cache_control?, strict?}`, `type` absent or
 *   `"custom"`) → a function tool with `input_schema` as its `parameters`.
 * - Anthropic's server and client tools (`web_search_…`, `bash_…`, `text_editor_…`, `computer_…`, …) run at
 *   Anthropic: noted as what only a Claude target serves.
 * - `tool_choice`: `auto` → `"auto"`, `any` → `"required"`, `tool` → the named function (one of the request's
 *   tools, else a 400), `none` → `"none"`;
 *   `disable_parallel_tool_use: true` → `parallel_tool_calls: false`.
 *
 * @module
 */
import { printable } from "../../errors.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { type ContentNotes, extraFields } from "./content.ts";
import {
  booleanField,
  checkCacheControl,
  extraField,
  fieldError,
  stringField,
  wrongType,
} from "./validate.ts";

const TOOL_FIELDS = new Set(["type", "name", "description", "input_schema", "cache_control", "strict"]);

/** Sets `chat.tools` from the Messages `tools` (nothing for an empty list). */
export function translateTools(tools: unknown[], chat: ChatRequest, notes: ContentNotes): void {
  const out: JsonObject[] = [];
  tools.forEach((tool, i) => {
    const path = `tools.${i}`;
    if (!isObject(tool)) throw wrongType(path, "an object", tool);
    const name = stringField(tool, "name", `${path}.name`, true)!;
    if (tool.type !== undefined && tool.type !== null && tool.type !== "custom") {
      // A server tool (web search, code execution, …) runs at Anthropic: only a Claude target serves it.
      notes.tolerance.native.push(`${path}`);
      return;
    }
    extraFields(tool, TOOL_FIELDS, path, notes);
    checkCacheControl(tool.cache_control, `${path}.cache_control`);
    if (!isObject(tool.input_schema)) {
      throw wrongType(`${path}.input_schema`, "a valid dictionary", tool.input_schema);
    }
    const fn: JsonObject = { name, parameters: tool.input_schema };
    const description = stringField(tool, "description", `${path}.description`);
    if (description !== undefined) fn.description = description;
    const strict = booleanField(tool, "strict", `${path}.strict`);
    if (strict !== undefined) fn.strict = strict;
    out.push({ type: "function", function: fn });
  });
  if (out.length > 0) chat.tools = out;
}

/**
 * Sets `chat.tool_choice` (and `parallel_tool_calls`) from the Messages `tool_choice`. A `tool` choice must name
 * one of `declared` (the names in the request's `tools`), as Anthropic requires: a translated target would
 * otherwise ignore the choice or refuse it in its own terms.
 */
export function translateToolChoice(choice: unknown, chat: ChatRequest, declared: readonly unknown[]): void {
  if (!isObject(choice)) throw wrongType("tool_choice", "an object", choice);
  const extra = extraField(choice, new Set(["type", "name", "disable_parallel_tool_use"]), "tool_choice");
  if (extra !== null) throw extra;
  const disable = booleanField(choice, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use");
  switch (choice.type) {
    case "auto":
      chat.tool_choice = "auto";
      break;
    case "any":
      chat.tool_choice = "required";
      break;
    case "tool": {
      const name = stringField(choice, "name", "tool_choice.name", true)!;
      if (!declared.includes(name)) {
        throw fieldError(
          "tool_choice.name",
          `The tool '${printable(name)}' is not one of the request's tools.`,
        );
      }
      chat.tool_choice = { type: "function", function: { name } };
      break;
    }
    case "none":
      chat.tool_choice = "none";
      break;
    default:
      throw fieldError("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'.");
  }
  if (disable === true && chat.tools !== undefined) chat.parallel_tool_calls = false;
}
