import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";

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

Deno.test("responses request: items become messages, tool calls and tool results", () => {
  const { chat } = parseResponsesRequest({
    model: "m",
    input: [
      { role: "developer", content: [{ type: "input_text", text: "Rules." }] },
      {
        role: "user",
        content: [
          { type: "input_text", text: "What is this?" },
          { type: "input_image", image_url: "https://x/y.png" },
        ],
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me look." }] },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call", call_id: "c2", name: "g", arguments: '{"a":1}' },
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "function_call_output", call_id: "c1", output: "one" },
      { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "two" }] },
    ],
    tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
    tool_choice: { type: "function", name: "f" },
    parallel_tool_calls: false,
    text: { format: { type: "json_schema", name: "out", schema: { type: "object" }, strict: true } },
  });
  assert.deepEqual(chat.messages, [
    { role: "developer", content: "Rules." },
    {
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: "https://x/y.png", detail: "auto" } },
      ],
    },
    {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "f", arguments: "{}" } },
        { id: "c2", type: "function", function: { name: "g", arguments: '{"a":1}' } },
      ],
    },
    { role: "tool", tool_call_id: "c1", content: "one" },
    { role: "tool", tool_call_id: "c2", content: "two" },
  ]);
  assert.deepEqual(chat.tools, [{
    type: "function",
    function: { name: "f", parameters: { type: "object" } },
  }]);
  assert.deepEqual(chat.tool_choice, { type: "function", function: { name: "f" } });
  assert.equal(chat.parallel_tool_calls, false);
  assert.deepEqual(chat.response_format, {
    type: "json_schema",
    json_schema: { name: "out", schema: { type: "object" }, strict: true },
  });
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
    [{ model: "m", input: [{ type: "item_reference", id: "x" }] }, "input[0].type", "unsupported_value"],
    [{ model: "m", input: "x", tools: [{ type: "file_search" }] }, "tools", "unsupported_value"],
    [
      { model: "m", input: "x", tools: [{ type: "function", name: "bad name" }] },
      "tools[0].name",
      "invalid_value",
    ],
    [{ model: "m", input: "x", tool_choice: "sometimes" }, "tool_choice", "invalid_value"],
    [
      { model: "m", input: "x", tool_choice: { type: "web_search_preview" } },
      "tool_choice",
      "unsupported_value",
    ],
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
  assert.match(refusal({ model: "m", input: "x", tools: [{ type: "web_search" }] }).message, /web_search/);
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
