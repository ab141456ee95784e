/**
 * `tool_choice: {type: "allowed_tools", mode, tools}` on a translated target. The Responses API keeps every
 * tool in `tools` (so the prompt cache holds) and lets the model call only the allowed ones; `required` mode
 * makes it call one of them. The chat form is given only the allowed tools and `tool_choice` `required` or
 * `auto`: every chat vendor takes that, where chat's own `allowed_tools` choice is OpenAI's alone. Without it
 * the target got every tool and no choice, so it could call a tool the client had ruled out, or answer in text
 * when the client relied on a call.
 *
 * @module
 */
import { invalidRequest } from "../../errors.ts";
import { type ChatRequest, isObject, type JsonObject } from "../../openai/types.ts";
import { type NativeNeeds, preferNative } from "./native_only.ts";
import { flatName } from "./namespaces.ts";
import { badValue, missing, string, wrongType } from "./validate.ts";

/**
 * The chat names of the request's function and custom tools, by what an allowed tool names: `name` for a
 * top-level one, `<namespace>/<name>` for one inside a namespace, and `<namespace>/` for all of a namespace.
 */
function chatNames(tools: unknown): Map<string, string[]> {
  const names = new Map<string, string[]>();
  const add = (key: string, name: string) => names.set(key, [...names.get(key) ?? [], name]);
  if (!Array.isArray(tools)) return names;
  for (const tool of tools) {
    if (!isObject(tool) || typeof tool.name !== "string") continue;
    if (tool.type === "function" || tool.type === "custom") add(tool.name, tool.name);
    if (tool.type !== "namespace" || !Array.isArray(tool.tools)) continue;
    for (const inner of tool.tools) {
      if (!isObject(inner) || typeof inner.name !== "string") continue;
      if (inner.type !== "function" && inner.type !== "custom") continue;
      const flat = flatName(tool.name, inner.name);
      add(`${tool.name}/${inner.name}`, flat);
      // A tool of the default namespace (`functions`) is a top-level one to the model: named by its name too.
      if (flat === inner.name) add(inner.name, flat);
      add(`${tool.name}/`, flat);
    }
  }
  return names;
}

/**
 * The chat names `entry` (`tool_choice.tools[j]`) allows; undefined for a built-in tool (none in the chat
 * form). A function or custom tool is named by `name` (and `namespace`, for one inside a namespace), a whole
 * namespace by `{type: "namespace", name}`.
 */
function allowedNames(entry: unknown, at: string, names: Map<string, string[]>): string[] | undefined {
  if (!isObject(entry)) throw wrongType(at, "an object", entry);
  if (typeof entry.type !== "string") {
    throw entry.type == null ? missing(`${at}.type`) : wrongType(`${at}.type`, "a string", entry.type);
  }
  if (entry.type === "namespace") return names.get(`${string(entry, "name", `${at}.name`, true)}/`) ?? [];
  if (entry.type !== "function" && entry.type !== "custom") return undefined;
  const name = string(entry, "name", `${at}.name`, true)!;
  const namespace = string(entry, "namespace", `${at}.namespace`);
  return names.get(namespace === undefined ? name : `${namespace}/${name}`) ?? [];
}

/**
 * `choice` (an `allowed_tools` tool choice) in `chat`: its tools cut down to the allowed ones, and its
 * `tool_choice` the mode (none, with no tool left: the chat form takes no choice without tools). An allowed
 * built-in tool is noted in `needs` as any built-in tool is (a native target runs it, a translated one goes
 * without); an allowed tool the request does not declare is refused on a translated target, which cannot tell
 * what the client meant by it (a native one judges it itself).
 */
export function applyAllowedTools(
  chat: ChatRequest,
  choice: JsonObject,
  tools: unknown,
  needs: NativeNeeds,
): void {
  const mode = string(choice, "mode", "tool_choice.mode", true)!;
  if (mode !== "auto" && mode !== "required") throw badValue("tool_choice.mode", mode, ["auto", "required"]);
  if (choice.tools == null) throw missing("tool_choice.tools");
  if (!Array.isArray(choice.tools)) throw wrongType("tool_choice.tools", "an array", choice.tools);
  const names = chatNames(tools);
  const allowed = new Set<string>();
  choice.tools.forEach((entry, j) => {
    const at = `tool_choice.tools[${j}]`;
    const found = allowedNames(entry, at, names);
    if (found === undefined) return preferNative(needs, at);
    // With no tool in the chat form at all, checkForcedCall's refusal (or plain text, in `auto` mode) says it.
    if (found.length === 0 && chat.tools !== undefined) {
      needs.tolerance.refusal ??= invalidRequest(
        `Invalid value for '${at}': it names no function or custom tool of 'tools'.`,
        at,
        "invalid_value",
      );
    }
    found.forEach((name) => allowed.add(name));
  });
  const kept = (Array.isArray(chat.tools) ? chat.tools : []).filter((tool) =>
    isObject(tool) && isObject(tool.function) && allowed.has(String(tool.function.name))
  );
  if (kept.length === 0) {
    delete chat.tools;
    return;
  }
  chat.tools = kept;
  chat.tool_choice = mode;
}
