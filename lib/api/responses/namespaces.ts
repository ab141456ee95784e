/**
 * Namespace tools (`{type: "namespace", name, description, tools: [function tools]}`, what Codex groups its
 * sub-agent tools in) on a translated target. The chat form has no namespaces, so each function inside one
 * becomes a chat function named `<namespace>__<name>`; a call the target makes by that name comes back to the
 * client as a `function_call` with the function's own `name` and its `namespace`, as OpenAI answers it. A call
 * in the input history with a `namespace` goes to the target by the same flat name.
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
 * The client's name (and namespace) of a function the target called by its chat name: found among the
 * request's namespace tools (`tools`, as the Response echoes them); a plain function's name as it is.
 */
export function clientCall(
  tools: readonly JsonObject[],
  chatName: string,
): { name: string; namespace?: string } {
  if (!chatName.includes(JOIN)) return { name: chatName };
  for (const tool of tools) {
    if (tool.type !== "namespace" || typeof tool.name !== "string" || !Array.isArray(tool.tools)) continue;
    for (const inner of tool.tools) {
      if (isObject(inner) && typeof inner.name === "string" && flatName(tool.name, inner.name) === chatName) {
        return { name: inner.name, namespace: tool.name };
      }
    }
  }
  return { name: chatName };
}
