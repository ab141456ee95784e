/**
 * Namespace tools (`{type: "namespace", name, description, tools: [function and custom tools]}`, what Codex
 * groups its sub-agent tools in) on a translated target. The chat form has no namespaces, so each tool inside
 * one becomes a chat function named `<namespace>__<name>`; a call the target makes by that name comes back to
 * the client as a `function_call` (or `custom_tool_call`) with the tool's own `name` and its `namespace`, as
 * OpenAI answers it. A call in the input history with a `namespace` goes to the target by the same flat name.
 *
 * The namespace `functions` is the default one: OpenAI's models see the top-level function tools as
 * `functions.<name>`, so a client may declare its plain tools inside it (Codex's code mode does, in its
 * `additional_tools` input item: additional_tools.ts). Its tools keep their own names in the chat form, as
 * Codex's own flattening names them, and a call of one comes back with `namespace: "functions"`, the namespace
 * it was declared in (Codex takes the call with or without it).
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";

/** What joins a namespace and a function name in the chat form. */
const JOIN = "__";

/** The default namespace, whose tools are named as top-level ones. */
const DEFAULT_NAMESPACE = "functions";

/** The chat form's name of function `name` in `namespace`. */
export function flatName(namespace: string, name: string): string {
  return namespace === DEFAULT_NAMESPACE ? name : `${namespace}${JOIN}${name}`;
}

/**
 * The client's name (and namespace) of a tool the target called by its chat name, and whether it is a custom
 * tool (its call is a `custom_tool_call`): the first of the request's callable tools (`tools` as the Response
 * echoes them, then those its input added: additional_tools.ts) whose chat name it is, a namespace's by its
 * flat name; a name no tool has is a function's, as it is. The first is the one the chat form kept when two
 * share a name (additional_tools.ts), so the call is the tool the model was shown.
 */
export function clientCall(
  tools: readonly JsonObject[],
  chatName: string,
): { name: string; namespace?: string; custom: boolean } {
  for (const tool of tools) {
    if ((tool.type === "function" || tool.type === "custom") && tool.name === chatName) {
      return { name: chatName, custom: tool.type === "custom" };
    }
    if (tool.type !== "namespace" || typeof tool.name !== "string" || !Array.isArray(tool.tools)) continue;
    for (const inner of tool.tools) {
      if (!isObject(inner) || (inner.type !== "function" && inner.type !== "custom")) continue;
      if (typeof inner.name === "string" && flatName(tool.name, inner.name) === chatName) {
        return { name: inner.name, namespace: tool.name, custom: inner.type === "custom" };
      }
    }
  }
  return { name: chatName, custom: false };
}
