import assert from "node:assert/strict";
import { badGateway } from "../../errors.ts";
import type { ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import { completionToResponse, type ResponseFrame } from "./response.ts";
import { ResponseEvents } from "./stream.ts";
import { loadOpenApiSchemas } from "../../../tests/helpers/openapi_schema.ts";
import { checkEvents, checkResponse, type WireEvent } from "../../../tests/helpers/responses_conformance.ts";

/** The spec's schemas (null on a local run without the spec; CI always has it). */
const schemas = await loadOpenApiSchemas();

const APPLY_PATCH = {
  type: "custom",
  name: "apply_patch",
  description: "Use apply_patch to edit files.",
  format: { type: "grammar", syntax: "lark", definition: 'start: "*** Begin Patch" /.+/' },
};
const EXEC = { type: "function", name: "exec_command", parameters: { type: "object" } };
const PATCH = '*** Begin Patch\n*** Add File: a.txt\n+say "hi"\n*** End Patch';

const frame: ResponseFrame = {
  id: "resp_" + "0".repeat(48),
  createdAt: 1,
  alias: "a",
  params: parseResponsesRequest({ model: "a", input: "Hi", tools: [EXEC, APPLY_PATCH] }).params,
};

Deno.test("responses custom tools: a custom tool is a chat function with one string parameter, its format described", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: "Edit a.txt.",
    tools: [EXEC, APPLY_PATCH, { type: "custom", name: "note" }],
    tool_choice: { type: "custom", name: "apply_patch" },
  });
  const [, patch, note] = parsed.chat.tools as { function: JsonObject }[];
  assert.equal(patch.function.name, "apply_patch");
  assert.deepEqual(patch.function.parameters, {
    type: "object",
    properties: { input: { type: "string", description: "The tool's whole input, as raw text (not JSON)." } },
    required: ["input"],
    additionalProperties: false,
  });
  const description = String(patch.function.description);
  assert.ok(description.startsWith("Use apply_patch to edit files.\n\n"), description);
  assert.ok(description.includes("Lark grammar") && description.endsWith(APPLY_PATCH.format.definition));
  assert.match(String(note.function.description), /^Put the whole input of this tool, as raw text/);
  // Forcing the custom tool forces its function; nothing is dropped and no native target is needed.
  assert.deepEqual(parsed.chat.tool_choice, { type: "function", function: { name: "apply_patch" } });
  assert.deepEqual(parsed.tolerance.native, []);
  assert.deepEqual(parsed.tolerance.dropped, []);
  assert.equal(parsed.tolerance.refusal, null);
  // The Response echoes the tools as sent.
  assert.deepEqual(parsed.params.tools[1], APPLY_PATCH);
});

Deno.test("responses custom tools: a bad format is refused naming its field", () => {
  const refused = (format: unknown) => {
    try {
      parseResponsesRequest({ model: "m", input: "x", tools: [{ type: "custom", name: "t", format }] });
    } catch (err) {
      return (err as { param: string }).param;
    }
    assert.fail(`accepted ${JSON.stringify(format)}`);
  };
  assert.equal(refused({ type: "grammar", syntax: "ebnf", definition: "x" }), "tools[0].format.syntax");
  assert.equal(refused({ type: "grammar", syntax: "regex" }), "tools[0].format.definition");
  assert.equal(refused({ type: "json" }), "tools[0].format.type");
  assert.equal(refused("text"), "tools[0].format");
});

Deno.test("responses custom tools: custom_tool_call items and their outputs are the chat form's call and result", () => {
  const { chat, tolerance } = parseResponsesRequest({
    model: "m",
    input: [
      { role: "user", content: "Edit a.txt." },
      { type: "custom_tool_call", call_id: "call_1", name: "apply_patch", input: PATCH },
      { type: "custom_tool_call_output", call_id: "call_1", output: "Done!" },
    ],
  });
  assert.equal(tolerance.refusal, null);
  assert.deepEqual(chat.messages.slice(1), [
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_1",
        type: "function",
        function: { name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) },
      }],
    },
    { role: "tool", tool_call_id: "call_1", content: "Done!" },
  ]);
});

const call = (args: string) => ({
  id: "call_9",
  type: "function",
  function: { name: "apply_patch", arguments: args },
});

Deno.test("responses custom tools: the model's call of a custom tool is a custom_tool_call item with its input", () => {
  const response = completionToResponse(
    {
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "u",
      choices: [{
        index: 0,
        message: { role: "assistant", content: null, tool_calls: [call(JSON.stringify({ input: PATCH }))] },
        finish_reason: "tool_calls",
      }],
    },
    frame,
    { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  );
  checkResponse(schemas, response);
  const [item] = response.output as JsonObject[];
  assert.deepEqual({ ...item, id: undefined }, {
    id: undefined,
    type: "custom_tool_call",
    status: "completed",
    call_id: "call_9",
    name: "apply_patch",
    input: PATCH,
  });
});

function chunk(delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

Deno.test("responses custom tools: a streamed custom call gives its input's deltas, decoded, and the item", () => {
  const args = JSON.stringify({ input: PATCH });
  const ev = new ResponseEvents(frame);
  const all = [...ev.start(), ...ev.chunk(chunk({ role: "assistant", content: null }))];
  all.push(
    ...ev.chunk(
      chunk({ tool_calls: [{ index: 0, ...call(""), function: { name: "apply_patch", arguments: "" } }] }),
    ),
  );
  for (let i = 0; i < args.length; i += 7) {
    all.push(
      ...ev.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + 7) } }] })),
    );
  }
  all.push(
    ...ev.chunk(chunk({}, "tool_calls")),
    ...ev.finish({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }),
  );
  const done = checkEvents(schemas, all as WireEvent[]);
  const types = all.map((e) => e.type);
  assert.ok(!types.some((t) => t.startsWith("response.function_call_arguments")), types.join());
  const deltas = all.filter((e) => e.type === "response.custom_tool_call_input.delta");
  assert.ok(deltas.length > 5);
  assert.equal(deltas.map((e) => e.delta).join(""), PATCH);
  assert.equal(all.find((e) => e.type === "response.custom_tool_call_input.done")!.input, PATCH);
  const added = all.find((e) => e.type === "response.output_item.added")!.item as JsonObject;
  assert.equal(added.type, "custom_tool_call");
  const [item] = done.output as JsonObject[];
  assert.equal(item.type, "custom_tool_call");
  assert.equal(item.input, PATCH);

  // Arguments that hold no JSON input: the input is the arguments, in one delta at the end.
  const plain = new ResponseEvents(frame);
  const events = [
    ...plain.start(),
    ...plain.chunk(chunk({ tool_calls: [{ index: 0, ...call("*** Begin Patch") }] })),
    ...plain.chunk(chunk({}, "tool_calls")),
    ...plain.finish({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }),
  ];
  const whole = checkEvents(schemas, events as WireEvent[]);
  assert.equal((whole.output as JsonObject[])[0].input, "*** Begin Patch");
});

Deno.test("responses custom tools: response.failed holds an open custom call's input as its deltas built it", () => {
  for (const [args, shown] of [['{"input": "*** Begin', "*** Begin"], ["*** Begin", ""]]) {
    const ev = new ResponseEvents(frame);
    const sent = [...ev.start(), ...ev.chunk(chunk({ tool_calls: [{ index: 0, ...call(args) }] }))];
    const failed = checkEvents(schemas, [...sent, ...ev.fail(badGateway("cut"), sent.length)] as WireEvent[]);
    const [item] = failed.output as JsonObject[];
    assert.deepEqual([item.type, item.status, item.input], ["custom_tool_call", "incomplete", shown]);
  }
});
