import assert from "node:assert/strict";
import type { ChatCompletion, ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import { completionToResponse, newId, type ResponseFrame } from "./response.ts";
import { ResponseEvents } from "./stream.ts";

/** A namespace tool as Codex sends it (its sub-agent tools), beside a plain function tool. */
const TOOLS = [
  { type: "function", name: "exec_command", parameters: { type: "object" } },
  {
    type: "namespace",
    name: "multi_agent_v1",
    description: "Tools for spawning and managing sub-agents.",
    tools: [
      {
        type: "function",
        name: "close_agent",
        description: "Close an agent.",
        parameters: { type: "object" },
      },
      { type: "function", name: "send_input", parameters: { type: "object" } },
    ],
  },
];

function frameOf(parsed: ReturnType<typeof parseResponsesRequest>): ResponseFrame {
  return { id: newId("resp_"), createdAt: 1, alias: "a", params: parsed.params };
}

Deno.test("responses namespaces: a namespace's functions reach a chat target by flat names, nothing dropped", () => {
  const parsed = parseResponsesRequest({ model: "a", input: "Hi", tools: TOOLS });
  const names = (parsed.chat.tools as { function: { name: string; description?: string } }[])
    .map((t) => t.function.name);
  assert.deepEqual(names, ["exec_command", "multi_agent_v1__close_agent", "multi_agent_v1__send_input"]);
  assert.deepEqual(parsed.tolerance, { refusal: null, native: [], dropped: [] });
  assert.deepEqual(parsed.params.tools[1], TOOLS[1], "the Response echoes the namespace as sent");
});

Deno.test("responses namespaces: a call in the history goes by its flat name, a target's call comes back with its namespace", () => {
  const parsed = parseResponsesRequest({
    model: "a",
    tools: TOOLS,
    input: [
      { role: "user", content: "Close agent 7." },
      {
        type: "function_call",
        call_id: "c1",
        name: "close_agent",
        namespace: "multi_agent_v1",
        arguments: "{}",
      },
      { type: "function_call_output", call_id: "c1", output: "closed" },
    ],
  });
  const assistant = parsed.chat.messages[1] as unknown as { tool_calls: { function: { name: string } }[] };
  assert.equal(assistant.tool_calls[0].function.name, "multi_agent_v1__close_agent");

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
        tool_calls: [
          { id: "c2", type: "function", function: { name: "multi_agent_v1__send_input", arguments: "{}" } },
          { id: "c3", type: "function", function: { name: "exec_command", arguments: "{}" } },
        ],
      },
    }],
  };
  const frame = frameOf(parsed);
  const response = completionToResponse(completion, frame, {
    prompt_tokens: 1,
    completion_tokens: 1,
    total_tokens: 2,
  });
  const calls = (response.output as JsonObject[]).map((item) => [item.name, item.namespace]);
  assert.deepEqual(calls, [["send_input", "multi_agent_v1"], ["exec_command", undefined]]);

  // The same over a stream: the item as added, the arguments' done event and the item as done.
  const events = new ResponseEvents(frame);
  const chunk = (delta: JsonObject, finish: string | null = null): ChatCompletionChunk => ({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const all = [
    ...events.start(),
    ...events.chunk(chunk({
      tool_calls: [{
        index: 0,
        id: "c4",
        type: "function",
        function: { name: "multi_agent_v1__close_agent" },
      }],
    })),
    ...events.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] })),
    ...events.chunk(chunk({}, "tool_calls")),
    ...events.finish({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }),
  ] as JsonObject[];
  const added = all.find((e) => e.type === "response.output_item.added")!.item as JsonObject;
  const done = all.find((e) => e.type === "response.output_item.done")!.item as JsonObject;
  const argsDone = all.find((e) => e.type === "response.function_call_arguments.done")!;
  assert.deepEqual([added.name, added.namespace], ["close_agent", "multi_agent_v1"]);
  assert.deepEqual([done.name, done.namespace], ["close_agent", "multi_agent_v1"]);
  assert.equal(argsDone.name, "close_agent");
});

/** A namespace holding a custom tool (the spec's NamespaceToolParam holds function and custom tools). */
const WITH_CUSTOM = [{
  type: "namespace",
  name: "fs",
  description: "Files.",
  tools: [
    { type: "function", name: "read", parameters: { type: "object" } },
    { type: "custom", name: "apply_patch", description: "Apply a patch." },
  ],
}];

Deno.test("responses namespaces: a custom tool inside a namespace reaches a chat target and its call comes back custom", () => {
  const parsed = parseResponsesRequest({ model: "a", input: "Patch it.", tools: WITH_CUSTOM });
  const fns = (parsed.chat.tools as { function: JsonObject }[]).map((t) => t.function);
  assert.deepEqual(fns.map((fn) => fn.name), ["fs__read", "fs__apply_patch"]);
  assert.ok(String(fns[1].description).startsWith("Apply a patch."));
  assert.deepEqual(
    fns[1].parameters,
    (parseResponsesRequest({
      model: "a",
      input: "x",
      tools: [{ type: "custom", name: "apply_patch" }],
    }).chat.tools as { function: JsonObject }[])[0].function.parameters,
    "the same one string parameter",
  );
  assert.deepEqual(parsed.tolerance, { refusal: null, native: [], dropped: [] });

  const args = JSON.stringify({ input: "*** Begin Patch" });
  const frame = frameOf(parsed);
  const response = completionToResponse(
    {
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
          tool_calls: [{
            id: "c1",
            type: "function",
            function: { name: "fs__apply_patch", arguments: args },
          }],
        },
      }],
    },
    frame,
    { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  );
  const item = (response.output as JsonObject[])[0];
  assert.deepEqual(
    [item.type, item.name, item.namespace, item.input],
    ["custom_tool_call", "apply_patch", "fs", "*** Begin Patch"],
  );

  const events = new ResponseEvents(frame);
  const chunk = (delta: JsonObject, finish: string | null = null): ChatCompletionChunk => ({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const all = [
    ...events.start(),
    ...events.chunk(chunk({
      tool_calls: [{ index: 0, id: "c2", type: "function", function: { name: "fs__apply_patch" } }],
    })),
    ...events.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] })),
    ...events.chunk(chunk({}, "tool_calls")),
    ...events.finish({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }),
  ] as JsonObject[];
  const done = all.find((e) => e.type === "response.output_item.done")!.item as JsonObject;
  assert.deepEqual(
    [done.type, done.name, done.namespace, done.input],
    ["custom_tool_call", "apply_patch", "fs", "*** Begin Patch"],
  );
  const inputDone = all.find((e) => e.type === "response.custom_tool_call_input.done");
  assert.equal(inputDone?.input, "*** Begin Patch");
  assert.ok(!all.some((e) => String(e.type).startsWith("response.function_call_arguments")));
});
