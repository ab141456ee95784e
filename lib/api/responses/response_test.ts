import assert from "node:assert/strict";
import type { ChatCompletion } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import { completionToResponse, type ResponseFrame, responseUsage } from "./response.ts";
import { loadOpenApiSchemas } from "../../../tests/helpers/openapi_schema.ts";

/** The spec's schemas (null on a local run without the spec; CI always has it). */
const schemas = await loadOpenApiSchemas();

const frame: ResponseFrame = {
  id: "resp_1",
  createdAt: 1_700_000_000,
  alias: "my-alias",
  params: parseResponsesRequest({ model: "my-alias", input: "Hi", metadata: { a: "b" } }).params,
};

function completion(message: Record<string, unknown>, finish: string): ChatCompletion {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "upstream-model",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
    usage: {
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 2 },
    },
  };
}

Deno.test("responses response: a text answer", () => {
  const c = completion({ content: "Hello" }, "stop");
  const r = completionToResponse(c, frame, c.usage!);
  schemas?.assert("Response", r);
  assert.equal(r.id, "resp_1");
  assert.equal(r.object, "response");
  assert.equal(r.status, "completed");
  assert.equal(r.model, "my-alias");
  assert.equal(r.incomplete_details, null);
  assert.equal(typeof r.completed_at, "number");
  assert.deepEqual(r.metadata, { a: "b" });
  const [item] = r.output as Record<string, unknown>[];
  assert.match(String(item.id), /^msg_[0-9a-f]{48}$/);
  assert.equal(item.type, "message");
  assert.equal(item.role, "assistant");
  assert.equal(item.status, "completed");
  assert.deepEqual(item.content, [{ type: "output_text", text: "Hello", annotations: [], logprobs: [] }]);
  assert.deepEqual(r.usage, {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 2 },
    total_tokens: 15,
  });
});

Deno.test("responses response: cache writes of both lifetimes show as input_tokens_details.cache_write_tokens", () => {
  const usage = responseUsage({
    prompt_tokens: 1010,
    completion_tokens: 5,
    total_tokens: 1015,
    prompt_tokens_details: { cached_tokens: 0, cache_write_5m_tokens: 400, cache_write_1h_tokens: 600 },
  });
  assert.deepEqual(usage.input_tokens_details, { cached_tokens: 0, cache_write_tokens: 1000 });
});

Deno.test("responses response: tool calls become function_call items after the text", () => {
  const c = completion({
    content: "Checking.",
    tool_calls: [{ id: "call_9", type: "function", function: { name: "f", arguments: '{"x":1}' } }],
  }, "tool_calls");
  const r = completionToResponse(c, frame, c.usage!);
  schemas?.assert("Response", r);
  const output = r.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => i.type), ["message", "function_call"]);
  const call = output[1];
  assert.match(String(call.id), /^fc_/);
  assert.deepEqual([call.call_id, call.name, call.arguments, call.status], [
    "call_9",
    "f",
    '{"x":1}',
    "completed",
  ]);
});

Deno.test("responses response: length and content_filter stops are incomplete with their reasons", () => {
  const long = completion({ content: "Trunc" }, "length");
  const r = completionToResponse(long, frame, long.usage!);
  assert.equal(r.status, "incomplete");
  assert.deepEqual(r.incomplete_details, { reason: "max_output_tokens" });
  assert.equal(r.completed_at, null);
  assert.equal((r.output as Record<string, unknown>[])[0].status, "incomplete");
  const filtered = completion({ content: null }, "content_filter");
  const f = completionToResponse(filtered, frame, filtered.usage!);
  assert.deepEqual([f.status, f.incomplete_details], ["incomplete", { reason: "content_filter" }]);
  assert.deepEqual(f.output, []);
  schemas?.assert("Response", r);
  schemas?.assert("Response", f);
});

Deno.test("responses response: reasoning_content is a reasoning item with a summary, before the message", () => {
  const c = completion({ reasoning_content: "The user greets; greet back.", content: "Hello" }, "stop");
  const r = completionToResponse(c, frame, c.usage!);
  schemas?.assert("Response", r);
  const output = r.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => i.type), ["reasoning", "message"]);
  assert.match(String(output[0].id), /^rs_gw_[0-9a-f]{48}$/);
  assert.deepEqual(output[0].summary, [{ type: "summary_text", text: "The user greets; greet back." }]);
  assert.equal(output[0].status, "completed");
  assert.deepEqual(r.usage && (r.usage as { output_tokens_details: unknown }).output_tokens_details, {
    reasoning_tokens: 2,
  });
  // No reasoning, no reasoning item.
  const plain = completionToResponse(
    completion({ content: "Hi", reasoning_content: "" }, "stop"),
    frame,
    c.usage!,
  );
  assert.deepEqual((plain.output as Record<string, unknown>[]).map((i) => i.type), ["message"]);
});
