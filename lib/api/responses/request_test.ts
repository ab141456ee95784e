import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { clientParam } from "./client_terms.ts";
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

Deno.test("responses request: an unknown parameter is dropped for a translated target, not refused (Codex's client_metadata)", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: "x",
    client_metadata: { "x-codex-turn-metadata": "{}" },
    a_parameter_from_next_week: true,
    context_management: [{ type: "compaction", compact_threshold: 1000 }],
  });
  assert.deepEqual(parsed.tolerance, {
    refusal: null,
    native: ["context_management"],
    dropped: ["client_metadata", "a_parameter_from_next_week"],
  });
  assert.equal("client_metadata" in parsed.chat, false, "the chat form has only what it translated");
});

Deno.test("responses request: refusals name their param like OpenAI", () => {
  const cases: [JsonObject, string, string][] = [
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
    // An integer past 2^53 is an integer above the maximum (as on chat), not "an integer, but got an integer".
    [{ model: "m", input: "x", max_output_tokens: 1e20 }, "max_output_tokens", "integer_above_max_value"],
    [{ model: "m", input: "x", max_tool_calls: 2 ** 53 }, "max_tool_calls", "integer_above_max_value"],
    [{ model: "m", input: "x", max_output_tokens: 16.5 }, "max_output_tokens", "invalid_type"],
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

Deno.test("responses request: values outside the spec's bounds and enums are 400s naming the param", () => {
  const refused: [Record<string, unknown>, string, string][] = [
    [{ max_output_tokens: 15 }, "max_output_tokens", "integer_below_min_value"],
    [{ temperature: 2.5 }, "temperature", "decimal_above_max_value"],
    [{ top_p: -0.1 }, "top_p", "decimal_below_min_value"],
    [{ top_logprobs: 21 }, "top_logprobs", "integer_above_max_value"],
    [{ reasoning: { effort: "extreme" } }, "reasoning.effort", "invalid_value"],
    [{ reasoning: { summary: "verbose" } }, "reasoning.summary", "invalid_value"],
    [{ reasoning: { generate_summary: "all" } }, "reasoning.generate_summary", "invalid_value"],
    [{ service_tier: "gold" }, "service_tier", "invalid_value"],
    [{ prompt_cache_retention: "7d" }, "prompt_cache_retention", "invalid_value"],
    [{ include: ["everything"] }, "include[0]", "invalid_value"],
    [{ safety_identifier: "x".repeat(65) }, "safety_identifier", "string_above_max_length"],
  ];
  for (const [fields, param, code] of refused) {
    assert.throws(
      () => parseResponsesRequest({ model: "m", input: "x", ...fields }),
      (err: GatewayError) => err.status === 400 && err.param === param && err.code === code,
      JSON.stringify(fields),
    );
  }
  const ok = parseResponsesRequest({
    model: "m",
    input: "x",
    max_output_tokens: 16,
    reasoning: { effort: "xhigh", summary: "concise" },
    service_tier: "flex",
    include: ["reasoning.encrypted_content"],
  });
  assert.deepEqual(ok.params.reasoning, { effort: "xhigh", summary: "concise" });
  assert.equal(ok.chat.reasoning_effort, "xhigh");
  assert.deepEqual(ok.tolerance, { refusal: null, native: [], dropped: ["include[0]"] });
});

Deno.test("responses request: a prompt, top_logprobs, a file or an image by file_id need a native target", () => {
  const native = (fields: Record<string, unknown>) =>
    parseResponsesRequest({ model: "m", ...fields }).tolerance.refusal?.param ??
      parseResponsesRequest({ model: "m", ...fields }).tolerance.native[0];
  assert.equal(native({ input: "x", prompt: { id: "pmpt_1" } }), "prompt");
  assert.equal(native({ prompt: { id: "pmpt_1" } }), "prompt", "a template may hold the whole input");
  assert.equal(native({ input: "x", top_logprobs: 3 }), "top_logprobs");
  assert.equal(native({ input: "x", top_logprobs: 0 }), undefined, "none asked: every target serves it");
  assert.equal(native({ input: "x", max_tool_calls: 2 }), undefined, "it bounds built-in tool calls only");
  const parts = (part: Record<string, unknown>) => ({
    input: [{ role: "user", content: [{ type: "input_text", text: "t" }, part] }],
  });
  assert.equal(native(parts({ type: "input_file", file_id: "file-1" })), "input[0].content[1].type");
  assert.equal(native(parts({ type: "input_image", file_id: "file-1" })), "input[0].content[1].file_id");
  // The part keeps its place in the chat form, so later errors name the client's index.
  const parsed = parseResponsesRequest({ model: "m", ...parts({ type: "input_file", file_data: "data:x" }) });
  assert.deepEqual(parsed.chat.messages[0].content, [{ type: "text", text: "t" }, {
    type: "text",
    text: "",
  }]);
  assert.throws(
    () => parseResponsesRequest({ model: "m", ...parts({ type: "input_file" }) }),
    (err: GatewayError) => err.param === "input[0].content[1].file_id",
  );
  assert.throws(
    () => parseResponsesRequest({ model: "m", input: "x", conversation: "conv_1" }),
    (err: GatewayError) => err.param === "conversation",
  );
});
