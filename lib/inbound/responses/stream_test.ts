import assert from "node:assert/strict";
import { badGateway } from "../../errors.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import type { ResponseFrame } from "./response.ts";
import { encodeEvent, ResponseEvents } from "./stream.ts";

const frame: ResponseFrame = {
  id: "resp_1",
  createdAt: 1,
  alias: "a",
  params: parseResponsesRequest({ model: "a", input: "Hi" }).params,
};
const USAGE = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

function chunk(delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

Deno.test("responses stream: text deltas in OpenAI's event order with rising sequence numbers", () => {
  const ev = new ResponseEvents(frame);
  const all = [
    ...ev.start(),
    ...ev.chunk(chunk({ role: "assistant", content: "" })),
    ...ev.chunk(chunk({ content: "Hel" })),
    ...ev.chunk(chunk({ content: "lo" })),
    ...ev.chunk(chunk({}, "stop")),
    ...ev.finish(USAGE),
  ];
  assert.deepEqual(all.map((e) => e.type), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  all.forEach((e, i) => assert.equal(e.sequence_number, i));
  assert.equal(all[6].text, "Hello");
  const done = all.at(-1)!.response as Record<string, unknown>;
  assert.equal(done.status, "completed");
  assert.deepEqual((done.usage as Record<string, unknown>).total_tokens, 5);
  const item = (done.output as Record<string, unknown>[])[0];
  assert.equal(item.id, all[4].item_id);
});

Deno.test("responses stream: a text then two tool calls; length stop is response.incomplete", () => {
  const ev = new ResponseEvents(frame);
  const all = [
    ...ev.chunk(chunk({ content: "Hm." })),
    ...ev.chunk(chunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: "" } }] })),
    ...ev.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] })),
    ...ev.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: ":1}" } }] })),
    ...ev.chunk(chunk({ tool_calls: [{ index: 1, id: "c2", function: { name: "g", arguments: "{}" } }] })),
    ...ev.chunk(chunk({}, "length")),
    ...ev.finish(USAGE),
  ];
  const types = all.map((e) => e.type);
  assert.deepEqual(types, [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.incomplete",
  ]);
  assert.equal(all[9].arguments, '{"a":1}');
  const done = all.at(-1)!.response as Record<string, unknown>;
  assert.deepEqual(done.incomplete_details, { reason: "max_output_tokens" });
  const output = done.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => [i.type, i.call_id ?? null]), [["message", null], [
    "function_call",
    "c1",
  ], [
    "function_call",
    "c2",
  ]]);
});

Deno.test("responses stream: a failure is an error event then response.failed", () => {
  const ev = new ResponseEvents(frame);
  ev.start();
  ev.chunk(chunk({ content: "partial" }));
  const end = ev.fail(badGateway("upstream went away"));
  assert.deepEqual(end.map((e) => e.type), ["error", "response.failed"]);
  assert.equal(end[0].message, "upstream went away");
  const failed = end[1].response as Record<string, unknown>;
  assert.equal(failed.status, "failed");
  assert.deepEqual(failed.error, { code: "server_error", message: "upstream went away" });
});

Deno.test("responses stream: frames are an event line and one data line", () => {
  const text = new TextDecoder().decode(encodeEvent({ type: "response.created", sequence_number: 0 }));
  assert.equal(text, 'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n');
});
