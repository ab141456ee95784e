/**
 * Namespace tools (`{type: "namespace", name, description, tools: [function and custom tools]}`, what Codex
 * groups its sub-agent tools in) on a translated target. The chat form has no namespaces, so each tool inside
 * one becomes a chat function named `<namespace>__<name>`; a call the target makes by that name comes back to
 * the client as a `function_call` (or `custom_tool_call`) with the tool's own `name` and its `namespace`, as
 * OpenAI answers it. A call in the input history with a `namespace` goes to the target by the same flat name.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/** What joins a namespace and a function name in the chat form. */
const JOIN = "__";

/** The chat form's name of function `name` in `namespace`. */
export function flatName(namespace: string, name: string): string {
  return `${namespace}${JOIN}${name}`;
}

/**
 * The client's name (and namespace) of a tool the target called by its chat name, and whether it is a custom
 * tool (its call is a `custom_tool_call`): found among the request's tools (`tools`, as the Response echoes
 * them), a namespace's by its flat name; a name no tool has is a function's, as it is.
 */
export function clientCall(
  tools: readonly JsonObject[],
  chatName: string,
): { name: string; namespace?: string; custom: boolean } {
  if (chatName.includes(JOIN)) {
    for (const tool of tools) {
      if (tool.type !== "namespace" || typeof tool.name !== "string" || !Array.isArray(tool.tools)) continue;
      for (const inner of tool.tools) {
        if (
          isObject(inner) && typeof inner.name === "string" && flatName(tool.name, inner.name) === chatName
        ) {
          return { name: inner.name, namespace: tool.name, custom: inner.type === "custom" };
        }
      }
    }
  }
  return { name: chatName, custom: tools.some((tool) => tool.type === "custom" && tool.name === chatName) };
}
