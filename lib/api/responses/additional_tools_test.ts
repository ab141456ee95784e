import assert from "node:assert/strict";
import type { ChatCompletion, JsonObject } from "../../openai/types.ts";
import { historyMessages } from "./input_items.ts";
import { parseResponsesRequest } from "./request.ts";
import { completionToResponse, newId } from "./response.ts";

/** An `additional_tools` item as Codex's code mode sends it, cut short. */
const ITEM = {
  type: "additional_tools",
  id: "at_1",
  role: "developer",
  tools: [
    {
      type: "namespace",
      name: "functions",
      description: "",
      tools: [
        { type: "custom", name: "exec", description: "Run JavaScript." },
        { type: "function", name: "wait", parameters: { type: "object" } },
      ],
    },
    {
      type: "namespace",
      name: "collaboration",
      description: "Sub-agents.",
      tools: [{ type: "function", name: "spawn_agent", parameters: { type: "object" } }],
    },
  ],
};
const USER = { role: "user", content: "Go." };

/** The chat names the target is given. */
function chatNames(chat: JsonObject): string[] {
  return ((chat.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);
}

/** What the client gets when the target calls `name`. */
function called(parsed: ReturnType<typeof parseResponsesRequest>, name: string): unknown[] {
  const completion: ChatCompletion = {
    id: "x",
    object: "chat.completion",
    created: 1,
    model: "u",
    choices: [{
      index: 0,
      finish_reason: "tool_calls",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name, arguments: '{"input":"1"}' } }],
      },
    }],
  };
  const frame = {
    id: newId("resp_"),
    createdAt: 1,
    alias: "a",
    params: parsed.params,
    callable: parsed.callable,
  };
  const item =
    (completionToResponse(completion, frame, { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 })
      .output as JsonObject[])[0];
  return [item.type, item.name, item.namespace];
}

Deno.test("responses additional_tools: the item's tools join the chat tools, not the echo; nothing dropped", () => {
  const parsed = parseResponsesRequest({ model: "a", input: [ITEM, USER] });
  assert.deepEqual(chatNames(parsed.chat), ["exec", "wait", "collaboration__spawn_agent"]);
  assert.deepEqual(parsed.tolerance, { refusal: null, native: [], dropped: [] });
  assert.deepEqual(parsed.params.tools, [], "the Response echoes the request's `tools`");
  assert.deepEqual(parsed.chat.messages, [USER]);
  assert.deepEqual(called(parsed, "exec"), ["custom_tool_call", "exec", "functions"]);
  assert.deepEqual(called(parsed, "collaboration__spawn_agent"), [
    "function_call",
    "spawn_agent",
    "collaboration",
  ]);
});

Deno.test("responses additional_tools: on a shared name the request's `tools` win, and the call is that tool's", () => {
  const exec = { type: "function", name: "exec", parameters: { type: "object", properties: { cmd: {} } } };
  const parsed = parseResponsesRequest({ model: "a", input: [ITEM, USER], tools: [exec] });
  assert.deepEqual(chatNames(parsed.chat), ["exec", "wait", "collaboration__spawn_agent"]);
  const kept = (parsed.chat.tools as { function: JsonObject }[])[0].function;
  assert.deepEqual(kept.parameters, exec.parameters);
  assert.deepEqual(called(parsed, "exec"), ["function_call", "exec", undefined]);
  // Two items: the first's definition is kept.
  const later = { ...ITEM, tools: [{ type: "custom", name: "wait" }] };
  const twice = parseResponsesRequest({ model: "a", input: [ITEM, later, USER] });
  assert.deepEqual(chatNames(twice.chat), ["exec", "wait", "collaboration__spawn_agent"]);
  assert.deepEqual(called(twice, "wait"), ["function_call", "wait", "functions"]);
});

Deno.test("responses additional_tools: tool_choice and allowed_tools name its tools", () => {
  const forced = parseResponsesRequest({
    model: "a",
    input: [ITEM, USER],
    tool_choice: { type: "custom", name: "exec" },
  });
  assert.deepEqual(forced.chat.tool_choice, { type: "function", function: { name: "exec" } });
  assert.equal(forced.tolerance.refusal, null);
  const allowed = parseResponsesRequest({
    model: "a",
    input: [ITEM, USER],
    tool_choice: {
      type: "allowed_tools",
      mode: "required",
      tools: [{ type: "custom", name: "exec" }, { type: "namespace", name: "collaboration" }],
    },
  });
  assert.deepEqual(chatNames(allowed.chat), ["exec", "collaboration__spawn_agent"]);
  assert.equal(allowed.chat.tool_choice, "required");
});

Deno.test("responses additional_tools: its tools are checked as `tools` are, named by the item's param", () => {
  for (
    const [item, param] of [
      [{ type: "additional_tools", role: "developer" }, "input[0].tools"],
      [{ type: "additional_tools", tools: {} }, "input[0].tools"],
      [{ type: "additional_tools", tools: [{ type: "function", name: "a b" }] }, "input[0].tools[0].name"],
    ] as const
  ) {
    assert.throws(() => parseResponsesRequest({ model: "a", input: [item, USER] }), { param });
  }
});

Deno.test("responses additional_tools: a rebuilt history leaves the item out, as it leaves out what has no chat form", () => {
  assert.deepEqual(historyMessages([ITEM, { type: "message", role: "user", content: "Go." }]), [USER]);
});
