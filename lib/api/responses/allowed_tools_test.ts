import assert from "node:assert/strict";
import { parseResponsesRequest } from "./request.ts";
import type { JsonObject } from "../../openai/types.ts";
import type { GatewayError } from "../../errors.ts";

const TOOLS = [
  { type: "function", name: "get_weather", parameters: {} },
  { type: "function", name: "delete_all", parameters: {} },
  { type: "custom", name: "apply_patch" },
  {
    type: "namespace",
    name: "fs",
    description: "files",
    tools: [{ type: "function", name: "read", parameters: {} }, { type: "function", name: "write" }],
  },
  { type: "web_search" },
];

function parse(choice: JsonObject) {
  return parseResponsesRequest({ model: "m", input: "hi", tools: TOOLS, tool_choice: choice });
}

function chatNames(tools: unknown): string[] {
  return (tools as { function: { name: string } }[]).map((t) => t.function.name);
}

Deno.test("allowed_tools: the chat form gets only the allowed tools and the mode as its tool_choice", () => {
  const required = parse({
    type: "allowed_tools",
    mode: "required",
    tools: [{ type: "function", name: "get_weather" }, { type: "custom", name: "apply_patch" }],
  });
  assert.deepEqual(chatNames(required.chat.tools), ["get_weather", "apply_patch"]);
  assert.equal(required.chat.tool_choice, "required");
  assert.equal(required.tolerance.refusal, null);
  assert.deepEqual(required.tolerance.native, ["tools[4]"]);
  // The Response echoes the choice as the client sent it.
  assert.equal((required.params.tool_choice as JsonObject).type, "allowed_tools");

  const auto = parse({
    type: "allowed_tools",
    mode: "auto",
    tools: [{ type: "function", name: "delete_all" }],
  });
  assert.deepEqual(chatNames(auto.chat.tools), ["delete_all"]);
  assert.equal(auto.chat.tool_choice, "auto");
});

Deno.test("allowed_tools: namespaced tools are allowed by name and namespace, or as a whole namespace", () => {
  const one = parse({
    type: "allowed_tools",
    mode: "required",
    tools: [{ type: "function", name: "read", namespace: "fs" }],
  });
  assert.deepEqual(chatNames(one.chat.tools), ["fs__read"]);
  const all = parse({ type: "allowed_tools", mode: "auto", tools: [{ type: "namespace", name: "fs" }] });
  assert.deepEqual(chatNames(all.chat.tools), ["fs__read", "fs__write"]);
});

Deno.test("allowed_tools: a built-in allowed tool is dropped as built-ins are, and nothing left to force is a 400", () => {
  const mixed = parse({
    type: "allowed_tools",
    mode: "required",
    tools: [{ type: "web_search" }, { type: "function", name: "get_weather" }],
  });
  assert.deepEqual(chatNames(mixed.chat.tools), ["get_weather"]);
  assert.deepEqual(mixed.tolerance.native, ["tools[4]", "tool_choice.tools[0]"]);
  assert.equal(mixed.tolerance.refusal, null);

  const builtinOnly = parse({ type: "allowed_tools", mode: "required", tools: [{ type: "web_search" }] });
  assert.equal(builtinOnly.chat.tools, undefined);
  assert.equal(builtinOnly.chat.tool_choice, undefined);
  assert.equal(builtinOnly.tolerance.refusal?.toBody().error.param, "tool_choice");

  // In `auto` mode the model may answer in text: it does, with no tool offered.
  const builtinAuto = parse({ type: "allowed_tools", mode: "auto", tools: [{ type: "web_search" }] });
  assert.equal(builtinAuto.chat.tools, undefined);
  assert.equal(builtinAuto.chat.tool_choice, undefined);
  assert.equal(builtinAuto.tolerance.refusal, null);
});

Deno.test("allowed_tools: an undeclared tool is refused on a translated target; a bad mode or list is a 400", () => {
  const unknown = parse({ type: "allowed_tools", mode: "auto", tools: [{ type: "function", name: "nope" }] });
  assert.equal(unknown.tolerance.refusal?.toBody().error.param, "tool_choice.tools[0]");
  for (
    const [choice, param] of [
      [{ type: "allowed_tools", mode: "any", tools: [] }, "tool_choice.mode"],
      [{ type: "allowed_tools", tools: [] }, "tool_choice.mode"],
      [{ type: "allowed_tools", mode: "auto" }, "tool_choice.tools"],
      [
        { type: "allowed_tools", mode: "auto", tools: [{ name: "get_weather" }] },
        "tool_choice.tools[0].type",
      ],
      [{ type: "allowed_tools", mode: "auto", tools: [{ type: "function" }] }, "tool_choice.tools[0].name"],
    ] as const
  ) {
    assert.throws(() => parse(choice), (err: GatewayError) => {
      assert.equal(err.status, 400);
      assert.equal(err.toBody().error.param, param);
      return true;
    });
  }
});

Deno.test("allowed_tools: parallel_tool_calls still reaches the chat form with the allowed tools", () => {
  const { chat } = parseResponsesRequest({
    model: "m",
    input: "hi",
    tools: TOOLS,
    parallel_tool_calls: false,
    tool_choice: { type: "allowed_tools", mode: "auto", tools: [{ type: "function", name: "get_weather" }] },
  });
  assert.equal(chat.parallel_tool_calls, false);
});
