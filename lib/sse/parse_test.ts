import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { type SseEvent, sseParseTransformer } from "./parse.ts";
import { runStages } from "../../tests/helpers/run_stages.ts";

const encoder = new TextEncoder();

/** Runs `chunks` through a fresh parser and collects every event. */
async function parseChunks(chunks: Uint8Array[], maxEventBytes?: number): Promise<SseEvent[]> {
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  const events: SseEvent[] = [];
  for await (const event of runStages(source, sseParseTransformer({ maxEventBytes }))) events.push(event);
  return events;
}

function parseText(...texts: string[]): Promise<SseEvent[]> {
  return parseChunks(texts.map((t) => encoder.encode(t)));
}

/** CRLF, CR and LF line ends, a BOM, a comment, multi-line data, an id, "é" and an emoji. */
const SAMPLE = "\uFEFFdata: héllo 😀\r\n\r\n" +
  ": ping\r\n" +
  "event: update\r\ndata: line1\r\ndata:line2\r\nid: 7\r\n\r\n" +
  'data: {"x":"é😀"}\n\n' +
  "data: cr\r\rdata: last";
const SAMPLE_BYTES = encoder.encode(SAMPLE);
const SAMPLE_EVENTS: SseEvent[] = [
  { data: "héllo 😀" },
  { event: "update", data: "line1\nline2", id: "7" },
  { data: '{"x":"é😀"}', id: "7" },
  { data: "cr", id: "7" },
  { data: "last", id: "7" },
];

Deno.test("parses the sample in one chunk", async () => {
  assert.deepEqual(await parseChunks([SAMPLE_BYTES]), SAMPLE_EVENTS);
});

Deno.test("gives the same events wherever the input is split once", async () => {
  for (let i = 0; i <= SAMPLE_BYTES.length; i++) {
    const events = await parseChunks([SAMPLE_BYTES.subarray(0, i), SAMPLE_BYTES.subarray(i)]);
    assert.deepEqual(events, SAMPLE_EVENTS, `split at byte ${i}`);
  }
});

Deno.test("gives the same events wherever the input is split twice", async () => {
  const n = SAMPLE_BYTES.length;
  for (let i = 0; i <= n; i++) {
    for (let j = i; j <= n; j++) {
      const chunks = [SAMPLE_BYTES.subarray(0, i), SAMPLE_BYTES.subarray(i, j), SAMPLE_BYTES.subarray(j)];
      assert.deepEqual(await parseChunks(chunks), SAMPLE_EVENTS, `split at bytes ${i} and ${j}`);
    }
  }
});

Deno.test("gives the same events when the input arrives one byte at a time", async () => {
  const chunks = Array.from(SAMPLE_BYTES, (b) => Uint8Array.of(b));
  assert.deepEqual(await parseChunks(chunks), SAMPLE_EVENTS);
});

Deno.test("treats a CR at the end of a chunk and an LF at the start of the next as one line end", async () => {
  assert.deepEqual(await parseText("data: a\r", "\ndata: b\r", "\n\r", "\n"), [{ data: "a\nb" }]);
  assert.deepEqual(await parseText("data: a\r", "", "\n", "data: b\r\n\r\n"), [{ data: "a\nb" }]);
});

Deno.test("accepts lone CR, lone LF and CRLF line ends", async () => {
  assert.deepEqual(await parseText("data: a\rdata: b\r\r"), [{ data: "a\nb" }]);
  assert.deepEqual(await parseText("data: a\ndata: b\n\n"), [{ data: "a\nb" }]);
  assert.deepEqual(await parseText("data: a\r\ndata: b\r\n\r\n"), [{ data: "a\nb" }]);
});

Deno.test("ignores comments and keep-alive pings", async () => {
  const events = await parseText(": keep-alive\n\n", ":\n", "data: x\n: inside\ndata: y\n\n", ": bye");
  assert.deepEqual(events, [{ data: "x\ny" }]);
});

Deno.test("strips at most one space after the colon and accepts a field with no colon", async () => {
  assert.deepEqual(await parseText("data:a\n\ndata:  b\n\ndata\n\ndata:\n\n"), [
    { data: "a" },
    { data: " b" },
    { data: "" },
    { data: "" },
  ]);
});

Deno.test("keeps event names per event and ignores unknown fields", async () => {
  const events = await parseText("event: add\ndata: 1\nfoo: bar\n\ndata: 2\n\n");
  assert.deepEqual(events, [{ event: "add", data: "1" }, { data: "2" }]);
});

Deno.test("does not dispatch an event without data lines", async () => {
  assert.deepEqual(await parseText("event: nothing\n\nretry: 5\n\n\n\n"), []);
});

Deno.test("keeps the last event id and reports valid retry values", async () => {
  const events = await parseText("id: 1\n\ndata: a\n\nretry: 3000\ndata: b\n\nretry: 3s\nid\ndata: c\n\n");
  assert.deepEqual(events, [{ data: "a", id: "1" }, { data: "b", id: "1", retry: 3000 }, { data: "c" }]);
});

Deno.test("strips a BOM split across chunks but keeps one later in the stream", async () => {
  const bytes = encoder.encode("\uFEFFdata: \uFEFFx\n\n");
  const events = await parseChunks([bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)]);
  assert.deepEqual(events, [{ data: "\uFEFFx" }]);
});

Deno.test("dispatches a final event that has no blank line (deviation from EventSource)", async () => {
  assert.deepEqual(await parseText("data: a\n\ndata: final"), [{ data: "a" }, { data: "final" }]);
  assert.deepEqual(await parseText("data: final\n"), [{ data: "final" }]);
  assert.deepEqual(await parseText("data: final\r"), [{ data: "final" }]);
  assert.deepEqual(await parseText("data: x\n\n: trailing comment"), [{ data: "x" }]);
});

Deno.test("emits an event as soon as its blank line arrives, while the input is still open", async () => {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const reader = runStages(readable, sseParseTransformer()).getReader();
  const written = writer.write(encoder.encode("data: first\n\ndata: sec"));
  assert.deepEqual(await reader.read(), { done: false, value: { data: "first" } });
  await written;
  const next = reader.read();
  await writer.write(encoder.encode("ond\n"));
  await writer.write(encoder.encode("\n"));
  assert.deepEqual(await next, { done: false, value: { data: "second" } });
  const end = reader.read();
  await writer.close();
  assert.deepEqual(await end, { done: true, value: undefined });
});

Deno.test("errors the stream when an event exceeds maxEventBytes", async () => {
  // "data: 0123" is 10 bytes: exactly at the limit is fine, and the count restarts for each event.
  assert.deepEqual(await parseText("data: 0123\n\ndata: 4567\n\n"), [{ data: "0123" }, { data: "4567" }]);
  assert.deepEqual(
    await parseChunks([encoder.encode("data: 0123\n\ndata: 4567\n\n: a long comment is not counted\n")], 10),
    [{ data: "0123" }, { data: "4567" }],
  );
  // An upstream fault, not an internal error: a 502 that routing retries elsewhere and counts against the target.
  await assert.rejects(parseChunks([encoder.encode("data: 01234\n\n")], 10), (err: GatewayError) => {
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 502);
    assert.equal(err.code, "upstream_response_too_large");
    assert.match(err.message, /larger than the gateway's limit of 10 bytes/);
    return true;
  });
  // Multi-line data counts every line; "é" counts as two bytes.
  await assert.rejects(parseChunks([encoder.encode("data: 012\ndata: 345\n\n")], 16), Error);
  await assert.rejects(parseChunks([encoder.encode("data: é123\n\n")], 10), Error);
});

Deno.test("errors as soon as a never-ending event passes the limit, not at the end", async () => {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const reading = runStages(readable, sseParseTransformer({ maxEventBytes: 1000 })).getReader().read();
  const chunk = encoder.encode("data: " + "x".repeat(100));
  let writes = 0;
  await assert.rejects(async () => {
    for (; writes < 100; writes++) await writer.write(chunk);
  }, /limit of 1000 bytes/);
  assert.ok(writes <= 10, `stopped after ${writes} writes`);
  await assert.rejects(reading, /limit of 1000 bytes/);
});

Deno.test("parses a large event delivered one byte at a time without quadratic cost", async () => {
  const size = 200_000;
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const reading = Array.fromAsync(runStages(readable, sseParseTransformer()));
  const bytes = encoder.encode(`data: ${"y".repeat(size)}\n\n`);
  for (let i = 0; i < bytes.length; i++) await writer.write(bytes.subarray(i, i + 1));
  await writer.close();
  const events = await reading;
  assert.equal(events.length, 1);
  assert.equal(events[0].data.length, size);
});
