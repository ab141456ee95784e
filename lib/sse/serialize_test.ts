import assert from "node:assert/strict";
import { sseParseTransformer } from "./parse.ts";
import { runStages } from "../../tests/helpers/run_stages.ts";
import { DONE_EVENT, doneEvent, encodeDataEvent, encodeJsonEvent } from "./serialize.ts";

const decoder = new TextDecoder();

Deno.test("encodes a data event", () => {
  assert.equal(decoder.decode(encodeDataEvent('{"a":1}')), 'data: {"a":1}\n\n');
  assert.equal(decoder.decode(encodeJsonEvent({ a: "é😀" })), 'data: {"a":"é😀"}\n\n');
});

Deno.test("writes one data line per line so a line break cannot end the event early", () => {
  assert.equal(decoder.decode(encodeDataEvent("a\nb\r\nc\rd")), "data: a\ndata: b\ndata: c\ndata: d\n\n");
});

Deno.test("refuses values that have no JSON form", () => {
  assert.throws(() => encodeJsonEvent(undefined), TypeError);
  assert.throws(() => encodeJsonEvent(1n), TypeError);
});

Deno.test("DONE_EVENT is data: [DONE] and doneEvent() returns a copy", () => {
  assert.equal(decoder.decode(DONE_EVENT), "data: [DONE]\n\n");
  const copy = doneEvent();
  assert.deepEqual(copy, DONE_EVENT);
  assert.notEqual(copy.buffer, DONE_EVENT.buffer);
});

Deno.test("encodeJsonEvent gives one event per value", () => {
  const values = [{ n: 1 }, { n: 2, s: "x\ny" }, [3], "four", null];
  assert.deepEqual(values.map((v) => decoder.decode(encodeJsonEvent(v))), [
    'data: {"n":1}\n\n',
    'data: {"n":2,"s":"x\\ny"}\n\n',
    "data: [3]\n\n",
    'data: "four"\n\n',
    "data: null\n\n",
  ]);
});

Deno.test("what encodeJsonEvent writes, sseParseTransformer reads back", async () => {
  const values = [{ id: "chatcmpl-1", choices: [{ delta: { content: "é 😀\n" } }] }, { done: true }];
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const v of values) controller.enqueue(encodeJsonEvent(v));
      controller.close();
    },
  });
  const events = await Array.fromAsync(runStages(source, sseParseTransformer()));
  assert.deepEqual(events.map((e) => JSON.parse(e.data)), values);
});

Deno.test("encodeJsonEvent writes what encodeDataEvent would, line breaks in strings and keys included", () => {
  const values = [
    { content: "a\nb\r\nc\rd", "k\ney": ["\n", "\r"] },
    "line\u2028separator\u2029paragraph",
    { nested: { deep: ["x\r\n".repeat(3)] } },
    [1, null, true, "plain"],
  ];
  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  for (const value of values) {
    const event = text(encodeJsonEvent(value));
    assert.equal(event, text(encodeDataEvent(JSON.stringify(value))));
    assert.equal(event.split("\n").length, 3, event);
  }
});
