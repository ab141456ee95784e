import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { clientParam, parseResponsesRequest } from "./request.ts";

function refusal(body: JsonObject): { param: string | null; code: string | null; message: string } {
  try {
    parseResponsesRequest(body);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 400);
    return { param: err.param, code: err.code, message: err.message };
  }
  assert.fail("accepted");
}

Deno.test("responses request: a string input with instructions and parameters in the chat form", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: "Hi",
    instructions: "Be brief.",
    max_output_tokens: 50,
    temperature: 0.5,
    top_p: 0.9,
    user: "u1",
    safety_identifier: "s1",
    prompt_cache_key: "k",
    reasoning: { effort: "low" },
    metadata: { team: "a" },
    store: false,
  });
  assert.deepEqual(parsed.chat, {
    model: "m",
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
    max_completion_tokens: 50,
    temperature: 0.5,
    top_p: 0.9,
    user: "u1",
    safety_identifier: "s1",
    prompt_cache_key: "k",
    reasoning_effort: "low",
  });
  assert.equal(parsed.stream, false);
  assert.equal(parsed.params.store, false);
  assert.deepEqual(parsed.params.metadata, { team: "a" });
  assert.equal(parsed.params.max_output_tokens, 50);
  assert.deepEqual(parsed.input, [{ type: "message", role: "user", content: "Hi" }]);
});

Deno.test("responses request: defaults echoed as OpenAI shows them", () => {
  const { params } = parseResponsesRequest({ model: "m", input: "Hi" });
  assert.equal(params.temperature, 1);
  assert.equal(params.top_p, 1);
  assert.equal(params.tool_choice, "auto");
  assert.deepEqual(params.tools, []);
  assert.equal(params.parallel_tool_calls, true);
  assert.deepEqual(params.text, { format: { type: "text" } });
  assert.equal(params.store, true);
  assert.equal(params.instructions, null);
  assert.equal(params.truncation, "disabled");
});

Deno.test("responses request: json_object format, and a stream", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: "Hi",
    text: { format: { type: "json_object" } },
    stream: true,
  });
  assert.deepEqual(parsed.chat.response_format, { type: "json_object" });
  assert.equal(parsed.chat.stream, true);
  assert.equal(parsed.stream, true);
});

Deno.test("responses request: refusals name their param like OpenAI", () => {
  const cases: [JsonObject, string, string][] = [
    [{ model: "m", input: "x", foo: 1 }, "foo", "unknown_parameter"],
    [{ input: "x" }, "model", "missing_required_parameter"],
    [{ model: "m" }, "input", "missing_required_parameter"],
    [{ model: "m", input: [] }, "input", "empty_array"],
    [{ model: "m", input: [{ role: "bot", content: "x" }] }, "input[0].role", "invalid_value"],
    [
      { model: "m", input: [{ role: "user", content: [{ type: "img" }] }] },
      "input[0].content[0].type",
      "invalid_value",
    ],
    [
      { model: "m", input: [{ role: "user", content: [{ type: "input_text" }] }] },
      "input[0].content[0].text",
      "missing_required_parameter",
    ],
    [
      { model: "m", input: [{ type: "function_call_output", call_id: "c" }] },
      "input[0].output",
      "missing_required_parameter",
    ],
    [{ model: "m", input: [{ type: "item_reference" }] }, "input[0].id", "missing_required_parameter"],
    [{ model: "m", input: [{ type: "item_reference", id: 7 }] }, "input[0].id", "invalid_type"],
    [{ model: "m", input: [{ type: "item_reference", id: "" }] }, "input[0].id", "invalid_value"],
    [{ model: "m", input: "x", tools: [{ name: "f" }] }, "tools[0].type", "missing_required_parameter"],
    [
      { model: "m", input: "x", tools: [{ type: "function", name: "bad name" }] },
      "tools[0].name",
      "invalid_value",
    ],
    [{ model: "m", input: "x", tool_choice: "sometimes" }, "tool_choice", "invalid_value"],
    [{ model: "m", input: "x", tool_choice: { type: 3 } }, "tool_choice.type", "invalid_type"],
    [{ model: "m", input: "x", background: true }, "background", "unsupported_parameter"],
    [
      { model: "m", input: "x", previous_response_id: 1 },
      "previous_response_id",
      "invalid_type",
    ],
    [{ model: "m", input: "x", max_output_tokens: 0 }, "max_output_tokens", "integer_below_min_value"],
    [{ model: "m", input: "x", top_p: 2 }, "top_p", "decimal_above_max_value"],
    [{ model: "m", input: "x", stream: "yes" }, "stream", "invalid_type"],
    [{ model: "m", input: "x", stream_options: {} }, "stream_options", "invalid_value"],
    [
      { model: "m", input: "x", text: { format: { type: "json_schema", name: "n" } } },
      "text.format.schema",
      "missing_required_parameter",
    ],
    [{ model: "m", input: "x", metadata: { k: 1 } }, "metadata.k", "invalid_type"],
    [{ model: "m", input: "x", truncation: "middle" }, "truncation", "invalid_value"],
  ];
  for (const [body, param, code] of cases) {
    const got = refusal(body);
    assert.deepEqual([got.param, got.code], [param, code], JSON.stringify(body));
  }
});

Deno.test("responses request: a chat-form param maps back to the client's own field", () => {
  const parsed = parseResponsesRequest(
    {
      model: "m",
      instructions: "Be brief.",
      input: [
        { role: "user", content: [{ type: "input_text", text: "a" }, { type: "input_text", text: "b" }] },
        { type: "item_reference", id: "msg_1" },
        { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
        { type: "function_call_output", call_id: "c", output: "x" },
        { role: "developer", content: [{ type: "input_text", text: "d" }] },
      ],
    },
    new Map([["msg_1", { id: "msg_1", type: "message", role: "assistant", content: "earlier" }]]),
  );
  const mapped = (param: string) => clientParam(parsed, param);
  assert.equal(mapped("messages[0].content"), "instructions");
  assert.equal(mapped("messages[1].content[1].text"), "input[0].content[1].text");
  assert.equal(mapped("messages[2].content"), "input[1]", "a referenced item is named by its reference");
  // The function call joined the referenced assistant turn; the tool output is the next message.
  assert.equal(mapped("messages[3].content"), "input[3].output");
  assert.equal(mapped("messages[4].content"), "input[4].content", "a developer message's parts became one");
  assert.equal(mapped("messages[9].content"), "messages[9].content", "no such message: unchanged");
  assert.equal(mapped("model"), "model");
  assert.equal(
    clientParam(parseResponsesRequest({ model: "m", input: "x" }), "messages[0].content"),
    "input",
  );
});

Deno.test("responses request: null optional parameters count as omitted", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: "x",
    tools: null,
    previous_response_id: null,
    background: null,
  });
  assert.equal(parsed.chat.tools, undefined);
});
