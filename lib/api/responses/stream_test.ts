import assert from "node:assert/strict";
import { badGateway } from "../../errors.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";
import { completionToResponse, newId, type ResponseFrame } from "./response.ts";
import { ResponseEvents } from "./stream.ts";
import { encodeEvent, type ResponseEvent } from "./stream_events.ts";
import { loadOpenApiSchemas } from "../../../tests/helpers/openapi_schema.ts";
import { checkEvents, type WireEvent } from "../../../tests/helpers/responses_conformance.ts";

/** The spec's schemas (null on a local run without the spec; CI always has it). */
const schemas = await loadOpenApiSchemas();

/** A whole stream's events checked as a client would: schemas, order, deltas, the final Response. */
function conforming(events: ResponseEvent[]): Record<string, unknown> {
  return checkEvents(schemas, events as WireEvent[]);
}

const frame: ResponseFrame = {
  id: newId("resp_"),
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

Deno.test("responses stream: created and in_progress list no output when the first chunk already has content", () => {
  // Ollama and OpenRouter send no role-only chunk first: the events of start() are encoded after the first
  // chunk's, which add the message; a snapshot listing it makes the openai SDK's stream() throw.
  const ev = new ResponseEvents(frame);
  const head = ev.start();
  const all = [
    ...head,
    ...ev.chunk(chunk({ role: "assistant", content: "Hi" })),
    ...ev.chunk(chunk({}, "stop")),
    ...ev.finish(USAGE),
  ];
  for (const e of head) assert.deepEqual((e.response as { output: unknown[] }).output, [], e.type);
  conforming(all);
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
    "response.output_item.added",
    "response.function_call_arguments.delta",
    // Calls are done at the end: a parallel call's deltas may still come for an earlier one.
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.incomplete",
  ]);
  assert.equal(all[11].arguments, '{"a":1}');
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

Deno.test("responses stream: interleaved parallel tool-call deltas (0, 1, 0, 1) stay within their open items", () => {
  const ev = new ResponseEvents(frame);
  const call = (index: number, args: string, id?: string) =>
    chunk({
      tool_calls: [{
        index,
        ...(id
          ? { id, function: { name: `f${index}`, arguments: args } }
          : { function: { arguments: args } }),
      }],
    });
  const all = [
    ...ev.start(),
    ...ev.chunk(call(0, '{"a"', "c0")),
    ...ev.chunk(call(1, '{"b"', "c1")),
    ...ev.chunk(call(0, ":1}")),
    ...ev.chunk(call(1, ":2}")),
    ...ev.chunk(chunk({}, "tool_calls")),
    ...ev.finish(USAGE),
  ];
  const done = conforming(all);
  const output = done.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => [i.call_id, i.name, i.arguments]), [
    ["c0", "f0", '{"a":1}'],
    ["c1", "f1", '{"b":2}'],
  ]);
  // Each argument delta is forwarded as its chunk arrives.
  assert.deepEqual(
    all.filter((e) => e.type === "response.function_call_arguments.delta").map((e) => e.delta),
    ['{"a"', '{"b"', ":1}", ":2}"],
  );
});

Deno.test("responses stream: calls that share one chat index (Ollama's 0) but have their own ids are separate calls", () => {
  const ev = new ResponseEvents(frame);
  const call = (id: string | undefined, name: string | undefined, args: string) =>
    chunk({
      tool_calls: [{
        index: 0,
        ...(id ? { id } : {}),
        function: { ...(name ? { name } : {}), arguments: args },
      }],
    });
  const all = [
    ...ev.start(),
    ...ev.chunk(call("call_a", "read_file", '{"path":"a"}')),
    ...ev.chunk(call("call_b", "list_dir", '{"path":')),
    // A delta without an id continues the call its index last started; one repeating that id does too.
    ...ev.chunk(call(undefined, undefined, '"b"')),
    ...ev.chunk(call("call_b", undefined, "}")),
    ...ev.chunk(chunk({}, "tool_calls")),
    ...ev.finish(USAGE),
  ];
  const done = conforming(all);
  const output = done.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => [i.call_id, i.name, i.arguments]), [
    ["call_a", "read_file", '{"path":"a"}'],
    ["call_b", "list_dir", '{"path":"b"}'],
  ]);
});

Deno.test("responses stream: reasoning_content deltas are a reasoning item's summary, in OpenAI's order", () => {
  const ev = new ResponseEvents(frame);
  const all = [
    ...ev.start(),
    ...ev.chunk(chunk({ role: "assistant", content: "" })),
    ...ev.chunk(chunk({ reasoning_content: "Think" })),
    ...ev.chunk(chunk({ reasoning_content: "ing." })),
    ...ev.chunk(chunk({ content: "Answer" })),
    ...ev.chunk(chunk({}, "stop")),
    ...ev.finish({ ...USAGE, completion_tokens_details: { reasoning_tokens: 7 } }),
  ];
  const done = conforming(all);
  assert.deepEqual(all.map((e) => e.type), [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "response.reasoning_summary_part.done",
    "response.output_item.done",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
  ]);
  // Each reasoning event is forwarded with its own chunk, not held for the message.
  assert.equal(all[4].delta, "Think");
  const output = done.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => i.type), ["reasoning", "message"]);
  assert.deepEqual(all[2].item, { id: output[0].id, type: "reasoning", status: "in_progress", summary: [] });
  assert.match(String(output[0].id), /^rs_gw_[0-9a-f]{48}$/);
  assert.deepEqual(output[0].summary, [{ type: "summary_text", text: "Thinking." }]);
  assert.deepEqual((done.usage as { output_tokens_details: unknown }).output_tokens_details, {
    reasoning_tokens: 7,
  });
  assert.deepEqual(
    ev.texts.opening(),
    ["Think", "ing.", "Answer"],
    "reasoning counts as output when no usage comes",
  );
});

Deno.test("responses stream: a length stop while reasoning leaves the reasoning item incomplete", () => {
  const ev = new ResponseEvents(frame);
  const all = [
    ...ev.start(),
    ...ev.chunk(chunk({ reasoning_content: "Hm" })),
    ...ev.chunk(chunk({}, "length")),
  ];
  all.push(...ev.finish(USAGE));
  const done = conforming(all);
  assert.equal(done.status, "incomplete");
  const [item] = done.output as Record<string, unknown>[];
  assert.deepEqual([item.type, item.status, item.summary], [
    "reasoning",
    "incomplete",
    [{ type: "summary_text", text: "Hm" }],
  ]);
});

Deno.test("responses stream: at a length stop the cut item is incomplete and the ones before it completed, as in the JSON answer", () => {
  const cutCall = {
    id: "call_A",
    type: "function",
    function: { name: "write", arguments: '{"path":"a.txt","te' },
  };
  const cases: {
    chunks: Record<string, unknown>[];
    message: Record<string, unknown>;
    statuses: string[][];
  }[] = [
    {
      // Cut in a call's arguments: the message before it was finished.
      chunks: [{ reasoning_content: "Plan." }, { content: "Writing it." }, {
        tool_calls: [{ index: 0, ...cutCall }],
      }],
      message: {
        role: "assistant",
        reasoning_content: "Plan.",
        content: "Writing it.",
        tool_calls: [cutCall],
      },
      statuses: [["reasoning", "completed"], ["message", "completed"], ["function_call", "incomplete"]],
    },
    {
      // Cut in the message: the reasoning before it was finished.
      chunks: [{ reasoning_content: "Plan." }, { content: "Writing" }],
      message: { role: "assistant", reasoning_content: "Plan.", content: "Writing" },
      statuses: [["reasoning", "completed"], ["message", "incomplete"]],
    },
  ];
  for (const { chunks, message, statuses } of cases) {
    const ev = new ResponseEvents(frame);
    const all = [
      ...ev.start(),
      ...chunks.flatMap((d) => ev.chunk(chunk(d))),
      ...ev.chunk(chunk({}, "length")),
    ];
    all.push(...ev.finish(USAGE));
    const streamed = conforming(all);
    const whole = completionToResponse(
      {
        id: "c",
        object: "chat.completion",
        created: 1,
        model: "u",
        choices: [{ index: 0, message, finish_reason: "length" }],
      },
      frame,
      USAGE,
    );
    for (const response of [streamed, whole]) {
      assert.equal(response.status, "incomplete");
      const output = response.output as Record<string, unknown>[];
      assert.deepEqual(output.map((i) => [i.type, i.status]), statuses);
    }
  }
});

Deno.test("responses stream: a failure is an error event then response.failed", () => {
  const ev = new ResponseEvents(frame);
  const sent = [...ev.start(), ...ev.chunk(chunk({ content: "partial" }))];
  // Numbered on from what the client was sent: here all but the last event built (a budget stop withheld it).
  const end = ev.fail(badGateway("upstream went away"), sent.length - 1);
  assert.deepEqual(end.map((e) => e.type), ["error", "response.failed"]);
  assert.deepEqual(end.map((e) => e.sequence_number), [sent.length - 1, sent.length]);
  assert.equal(end[0].message, "upstream went away");
  const failed = end[1].response as Record<string, unknown>;
  assert.equal(failed.status, "failed");
  assert.deepEqual(failed.error, { code: "server_error", message: "upstream went away" });
});

Deno.test("responses stream: response.failed holds the open items as their deltas built them, incomplete (and the done ones as done)", () => {
  const ev = new ResponseEvents(frame);
  const sent = [
    ...ev.start(),
    ...ev.chunk(chunk({ reasoning_content: "Plan." })),
    ...ev.chunk(chunk({ content: "Here is the plan. " })),
    ...ev.chunk(
      chunk({ tool_calls: [{ index: 0, id: "call_A", function: { name: "run", arguments: '{"cmd":"ls' } }] }),
    ),
  ];
  const end = ev.fail(badGateway("upstream went away"), sent.length);
  const failed = conforming([...sent, ...end]);
  const output = failed.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => [i.type, i.status]), [
    ["reasoning", "completed"],
    ["message", "completed"],
    ["function_call", "incomplete"],
  ]);
  assert.deepEqual((output[1].content as Record<string, unknown>[]).map((p) => p.text), [
    "Here is the plan. ",
  ]);
  assert.equal(output[2].arguments, '{"cmd":"ls');
});

Deno.test("responses stream: response.failed leaves out what the withheld events of a budget stop added", () => {
  const ev = new ResponseEvents(frame);
  const sent = [
    ...ev.start(),
    ...ev.chunk(chunk({ content: "Here is " })),
    ...ev.chunk(chunk({ content: "the plan." })),
  ];
  // The last chunk (a call starting, which closes the message) is built, and withheld from the client.
  const withheld = ev.chunk(
    chunk({ tool_calls: [{ index: 0, id: "call_A", function: { name: "run", arguments: "{}" } }] }),
  );
  assert.ok(withheld.length > 0);
  const end = ev.fail(badGateway("budget"), sent.length);
  const failed = conforming([...sent, ...end]);
  const output = failed.output as Record<string, unknown>[];
  assert.deepEqual(output.map((i) => [i.type, i.status]), [["message", "incomplete"]]);
  assert.deepEqual((output[0].content as Record<string, unknown>[]).map((p) => p.text), [
    "Here is the plan.",
  ]);
  // Withheld within a chunk: its added item and deltas are not in the failed Response.
  const cut = new ResponseEvents(frame);
  const shown = [...cut.start(), ...cut.chunk(chunk({ content: "Hi" }))];
  const lastDelta = shown.pop()!;
  assert.equal(lastDelta.type, "response.output_text.delta");
  const output2 = conforming([...shown, ...cut.fail(badGateway("budget"), shown.length)]).output as Record<
    string,
    unknown
  >[];
  assert.deepEqual((output2[0].content as Record<string, unknown>[]).map((p) => p.text), [""]);
});

Deno.test("responses stream: frames are an event line and one data line", () => {
  const text = new TextDecoder().decode(encodeEvent({ type: "response.created", sequence_number: 0 }));
  assert.equal(text, 'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n');
});
