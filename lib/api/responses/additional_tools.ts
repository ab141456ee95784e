/**
 * The `additional_tools` input item (`{type: "additional_tools", role: "developer", tools: [...]}`) on a
 * translated target. Codex 0.171 sends it for its code-mode models (its model list's `tool_mode:
 * code_mode_only`: gpt-5.6-*, gpt-6*, …) instead of `tools`: one item, first in the input, whose `tools` are
 * namespaces of function and custom tools (`functions` with its `exec` custom tool and `wait`, `collaboration`
 * with its sub-agent tools). They are tools the client runs, as `tools`' are, so the chat form gets them the
 * same way (tools.ts: a namespace's by flat names, `functions`' by their own, a custom tool as a function with
 * one string `input`), and the model's call of one comes back with the name and namespace the client declared
 * (namespaces.ts). What a chat target cannot run (a built-in tool in the list) is dropped and named, as in
 * `tools`. A native target gets the item as sent; a rebuilt history leaves such items out (input_items.ts).
 *
 * Where two tools take the same chat name, the first is kept: the request's `tools` before the items', then
 * the items in input order. `tools` is the request's own declaration, the one the Response echoes and a
 * `tool_choice` names, so a call is never resolved to another tool than the one the model was shown.
 *
 * @module
 */
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import type { NativeNeeds } from "./native_only.ts";
import { chatTools } from "./tools.ts";
import { missing } from "./validate.ts";

/** A chat function tool's name. */
function chatName(tool: unknown): unknown {
  return (tool as { function?: { name?: unknown } }).function?.name;
}

/**
 * Adds the tools of `input`'s `additional_tools` items to `chat.tools`, after those already there (the
 * request's `tools`), each chat name once; returns every tool the model may call as the client declared it
 * (`declared`: `tools` as echoed, then the items' tools), which its calls are named by.
 */
export function addAdditionalTools(
  input: readonly JsonObject[],
  chat: ChatRequest,
  declared: readonly JsonObject[],
  needs: NativeNeeds,
): JsonObject[] {
  const callable = [...declared];
  const tools = Array.isArray(chat.tools) ? chat.tools as JsonObject[] : [];
  const names = new Set(tools.map(chatName));
  input.forEach((item, i) => {
    if (item.type !== "additional_tools") return;
    const at = `input[${i}].tools`;
    if (item.tools == null) throw missing(at);
    const translated = chatTools(item.tools, needs, at);
    for (const tool of translated.chat) {
      if (names.has(chatName(tool))) continue;
      names.add(chatName(tool));
      tools.push(tool);
    }
    callable.push(...translated.echo);
  });
  if (tools.length > 0) chat.tools = tools;
  return callable;
}
