/**
 * Custom tools (`{type: "custom", name, description, format}`: free-form text input, optionally held to a
 * Lark or regex grammar; what Codex sends `apply_patch` as for GPT-5-style models) on a translated target.
 * They are run by the client, like function tools, so they are not a built-in tool a chat upstream goes
 * without: the chat form gets each as a function tool with one string parameter, `input`, its format written
 * into the description (a chat upstream cannot enforce a grammar, so the model is told it); the model's call
 * of it comes back to the client as a `custom_tool_call` item with that string as its `input`
 * (custom_input.ts), and `custom_tool_call` / `custom_tool_call_output` items in the input go upstream as the
 * call and its result. A native target gets all of it as sent.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import { customInput } from "./custom_input.ts";
import { clientCall } from "./namespaces.ts";
import { badValue, missing, string, wrongType } from "./validate.ts";

/** The one parameter that carries a custom tool's input in the chat form. */
const PARAMETERS = {
  type: "object",
  properties: { input: { type: "string", description: "The tool's whole input, as raw text (not JSON)." } },
  required: ["input"],
  additionalProperties: false,
};

/** What the model is told about the input, after the tool's own description. */
function formatNote(format: JsonObject | undefined, param: string): string {
  const intro = 'Put the whole input of this tool, as raw text, in its one string argument "input".';
  if (format === undefined || format.type === "text") return intro;
  if (format.type !== "grammar") {
    throw typeof format.type === "string"
      ? badValue(`${param}.format.type`, format.type, ["text", "grammar"])
      : format.type == null
      ? missing(`${param}.format.type`)
      : wrongType(`${param}.format.type`, "a string", format.type);
  }
  const syntax = string(format, "syntax", `${param}.format.syntax`, true)!;
  if (syntax !== "lark" && syntax !== "regex") {
    throw badValue(`${param}.format.syntax`, syntax, ["lark", "regex"]);
  }
  const definition = string(format, "definition", `${param}.format.definition`, true)!;
  const rule = syntax === "lark" ? "this Lark grammar" : "this regular expression";
  return `${intro} The input must match ${rule} exactly:\n\n${definition}`;
}

/** A custom tool (`name` already checked) as a chat function. */
export function customFunction(tool: JsonObject, name: string, param: string): JsonObject {
  const description = string(tool, "description", `${param}.description`);
  const format = tool.format ?? undefined;
  if (format !== undefined && !isObject(format)) throw wrongType(`${param}.format`, "an object", format);
  const note = formatNote(format, param);
  return {
    name,
    description: description === undefined || description === "" ? note : `${description}\n\n${note}`,
    parameters: structuredClone(PARAMETERS),
  };
}

/**
 * Whether the chat function `chatName` stands for a custom tool of the request's tools (as the Response echoes
 * them): a top-level one, or one inside a namespace by its flat name.
 */
export function isCustomTool(tools: readonly JsonObject[], chatName: string): boolean {
  return clientCall(tools, chatName).custom;
}

/** A `custom_tool_call` output item from the chat call's arguments; `name` is the client's, with its namespace. */
export function customCallItem(
  id: string,
  status: string,
  call: { call_id: string; name: string; arguments: string },
  namespace?: string,
): JsonObject {
  const item: JsonObject = {
    id,
    type: "custom_tool_call",
    status,
    call_id: call.call_id,
    name: call.name,
    input: customInput(call.arguments),
  };
  if (namespace !== undefined) item.namespace = namespace;
  return item;
}

/** A `custom_tool_call` input item's input, as the arguments of the chat call that stands for it. */
export function customArguments(item: JsonObject, param: string): string {
  const input = string(item, "input", `${param}.input`, true)!;
  return JSON.stringify({ input });
}
