/**
 * A Responses request's `tools` and `tool_choice` in the chat form. Function tools are flat in the Responses
 * API (`{type: "function", name, parameters}`) and nested in chat (`{type: "function", function: {…}}`);
 * custom tools become function tools with one string parameter (custom_tools.ts); built-in tools and a
 * built-in tool choice have no chat form: native targets are preferred for them, and a
 * translated target goes without them (native_only.ts). What the Response
 * echoes is kept beside the chat form, with OpenAI's defaults filled in.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { isObject, type JsonObject } from "../../openai/types.ts";
import { type NativeNeeds, preferNative } from "./native_only.ts";
import { flatName } from "./namespaces.ts";
import { customFunction } from "./custom_tools.ts";
import { badValue, missing, string, wrongType } from "./validate.ts";

/**
 * Function (and custom) tools in the chat form. A built-in tool has none: it is noted in `needs` (a native
 * target takes it as sent) and echoed as given, as a custom tool is. `at` is the client's param of the list
 * (`tools`, or an `additional_tools` input item's: additional_tools.ts).
 */
export function chatTools(
  tools: unknown,
  needs: NativeNeeds,
  at = "tools",
): { chat: JsonObject[]; echo: JsonObject[] } {
  if (!Array.isArray(tools)) throw wrongType(at, "an array", tools);
  const chat: JsonObject[] = [];
  const echo: JsonObject[] = [];
  tools.forEach((tool, i) => {
    const param = `${at}[${i}]`;
    if (!isObject(tool)) throw wrongType(param, "an object", tool);
    if (tool.type === "namespace") {
      chat.push(...namespaceTools(tool, param, needs));
      echo.push(tool);
      return;
    }
    if (tool.type === "custom") {
      chat.push({ type: "function", function: customFunction(tool, toolName(tool, param), param) });
      echo.push(tool);
      return;
    }
    if (tool.type !== "function") {
      if (typeof tool.type !== "string") {
        throw tool.type == null
          ? missing(`${param}.type`)
          : wrongType(`${param}.type`, "a string", tool.type);
      }
      // A built-in tool (web search, …): a native target runs it; a translated one answers without it.
      preferNative(needs, param);
      echo.push(tool);
      return;
    }
    const { fn, echoed } = functionTool(tool, param);
    chat.push({ type: "function", function: fn });
    echo.push(echoed);
  });
  return { chat, echo };
}

/** A tool or namespace name: what the chat form (and OpenAI) take. */
function toolName(tool: JsonObject, param: string): string {
  const name = string(tool, "name", `${param}.name`, true)!;
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
    throw invalidRequest(
      `Invalid '${param}.name': must be 1-64 letters, digits, _ or -.`,
      `${param}.name`,
      "invalid_value",
    );
  }
  return name;
}

/**
 * A namespace's function and custom tools (what the spec lets a namespace hold) in the chat form, each named
 * `<namespace>__<name>` (namespaces.ts); anything else inside it is a native target's to run, as a built-in
 * tool is.
 */
function namespaceTools(tool: JsonObject, param: string, needs: NativeNeeds): JsonObject[] {
  const namespace = toolName(tool, param);
  if (!Array.isArray(tool.tools)) throw wrongType(`${param}.tools`, "an array", tool.tools);
  const out: JsonObject[] = [];
  tool.tools.forEach((inner, j) => {
    const at = `${param}.tools[${j}]`;
    if (!isObject(inner)) throw wrongType(at, "an object", inner);
    if (inner.type !== "function" && inner.type !== "custom") return preferNative(needs, at);
    // A custom tool is run by the client like a function (custom_tools.ts), so a namespace does not change that.
    const fn = inner.type === "custom"
      ? customFunction(inner, toolName(inner, at), at)
      : functionTool(inner, at).fn;
    fn.name = flatName(namespace, fn.name as string);
    if ((fn.name as string).length > 64) {
      throw invalidRequest(
        `Invalid '${at}.name': with its namespace it is over 64 characters.`,
        `${at}.name`,
        "invalid_value",
      );
    }
    out.push({ type: "function", function: fn });
  });
  return out;
}

/** A function tool in the chat form, and as the Response echoes it. */
function functionTool(tool: JsonObject, param: string): { fn: JsonObject; echoed: JsonObject } {
  const name = toolName(tool, param);
  const description = string(tool, "description", `${param}.description`);
  const parameters = tool.parameters ?? undefined;
  if (parameters !== undefined && !isObject(parameters)) {
    throw wrongType(`${param}.parameters`, "an object", parameters);
  }
  const strict = tool.strict ?? undefined;
  if (strict !== undefined && typeof strict !== "boolean") {
    throw wrongType(`${param}.strict`, "a boolean", strict);
  }
  const fn: JsonObject = { name };
  if (description !== undefined) fn.description = description;
  if (parameters !== undefined) fn.parameters = parameters;
  if (strict !== undefined) fn.strict = strict;
  const echoed = {
    type: "function",
    name,
    description: description ?? null,
    parameters: parameters ?? null,
    // What the target applies: the chat form's default is non-strict, so an omitted `strict` is echoed false.
    strict: strict ?? false,
  };
  return { fn, echoed };
}

/**
 * `tool_choice` in the chat form; a built-in tool's choice is noted in `needs` and has none. (An `allowed_tools`
 * choice also changes the chat tools: allowed_tools.ts.)
 */
export function chatToolChoice(choice: unknown, needs: NativeNeeds): unknown {
  if (typeof choice === "string") {
    if (!["none", "auto", "required"].includes(choice)) {
      throw badValue("tool_choice", choice, ["none", "auto", "required"]);
    }
    return choice;
  }
  if (!isObject(choice)) throw wrongType("tool_choice", "a string or an object", choice);
  // A custom tool is a function of the chat form, so forcing it forces that function.
  if (choice.type === "function" || choice.type === "custom") {
    return { type: "function", function: { name: string(choice, "name", "tool_choice.name", true)! } };
  }
  if (typeof choice.type !== "string") {
    throw choice.type == null
      ? missing("tool_choice.type")
      : wrongType("tool_choice.type", "a string", choice.type);
  }
  preferNative(needs, "tool_choice");
  return undefined;
}

/**
 * Whether `choice` (as the client sent it) makes the model call a tool: `required`, a named function or custom
 * tool, or `allowed_tools` in `required` mode. Without a tool the chat form can carry, a translated target would drop
 * the choice and answer in text, the opposite of what the client relies on.
 */
function forcesCall(choice: unknown): boolean {
  if (choice === "required") return true;
  if (!isObject(choice)) return false;
  return choice.type === "function" || choice.type === "custom" ||
    (choice.type === "allowed_tools" && choice.mode === "required");
}

/**
 * Notes in `needs` the refusal of a `tool_choice` that forces a call when the chat form has no tool to call
 * (`hasChatTools` false: no tools, or only built-in ones a translated target goes without). A native target still
 * gets the request (it runs built-in tools, and answers a request without tools as OpenAI does); without one
 * it is the 400 naming `tool_choice`, as chat completions answer, instead of a plain-text answer.
 */
export function checkForcedCall(
  choice: unknown,
  tools: unknown,
  hasChatTools: boolean,
  needs: NativeNeeds,
): void {
  if (hasChatTools || !forcesCall(choice)) return;
  needs.tolerance.refusal ??= Array.isArray(tools) && tools.length > 0
    ? invalidRequest(
      "Invalid value for 'tool_choice': it forces a tool call, and 'tools' holds no function tool; built-in " +
        "tools need an upstream that speaks the Responses API natively (a provider with native_responses: " +
        "true), and no target of this model does.",
      "tool_choice",
      "unsupported_value",
    )
    : invalidRequest(
      "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
      "tool_choice",
      "invalid_value",
    );
}
