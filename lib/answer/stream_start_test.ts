import assert from "node:assert/strict";
import { ClientGoneError, GatewayError } from "../errors.ts";
import { withReportedPrompt } from "../openai/reported_prompt.ts";
import type { ChatCompletionChunk } from "../openai/types.ts";
import type { ChunkSource } from "../streams/pull_through.ts";
import { CHAT_START, chunkShows, heldPrompt, type StreamStart, untilShown } from "./stream_start.ts";

function chunk(delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk {
  return {
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

/** A source of `values`, then `end` (a clean end, or an error thrown); records whether it was cancelled. */
function source<T>(values: T[], end: "done" | Error = "done") {
  let reads = 0;
  const state = { cancelled: false, reads: () => reads };
  const reader: ChunkSource<T> = {
    read() {
      reads++;
      const value = values.shift();
      if (value !== undefined) return Promise.resolve({ done: false, value });
      return end === "done" ? Promise.resolve({ done: true, value: undefined }) : Promise.reject(end);
    },
    cancel() {
      state.cancelled = true;
      return Promise.resolve();
    },
  };
  return { reader, state };
}

async function drain<T>(reader: ChunkSource<T>): Promise<T[]> {
  const out: T[] = [];
  while (true) {
    const read = await reader.read();
    if (read.done) return out;
    out.push(read.value);
  }
}

const ROLE = chunk({ role: "assistant", content: "", refusal: null });

Deno.test("stream start: a chunk shows content, reasoning, a tool call, a refusal or a finish; a role or annotation does not", () => {
  assert.equal(chunkShows(ROLE), false);
  assert.equal(chunkShows(chunk({})), false);
  assert.equal(chunkShows(chunk({ content: null, tool_calls: [] })), false);
  assert.equal(chunkShows({ ...ROLE, choices: [] }), false, "a usage-only or annotation-only chunk");
  assert.equal(
    chunkShows({ ...ROLE, choices: [{ index: 0, content_filter_results: {}, delta: {} }] }),
    false,
  );
  for (
    const delta of [
      { content: "Hi" },
      { reasoning_content: "Hmm" },
      { tool_calls: [{ index: 0, id: "call_1", function: { name: "f", arguments: "" } }] },
      { refusal: "No." },
      { role: "assistant", content: "Hi" },
    ]
  ) assert.equal(chunkShows(chunk(delta)), true, JSON.stringify(delta));
  assert.equal(chunkShows(chunk({}, "stop")), true);
});

Deno.test("stream start: values before the first that shows are held and handed on in order", async () => {
  const hi = chunk({ content: "Hi" });
  const end = chunk({}, "stop");
  const { reader, state } = source([ROLE, hi, end]);
  const peeked = await untilShown("p", reader, CHAT_START);
  assert.equal(state.reads(), 2, "nothing is read past the first value that shows");
  assert.equal(peeked.first, ROLE);
  assert.deepEqual(await drain(peeked.rest), [hi, end]);
});

Deno.test("stream start: a failure before anything showed cancels the upstream and is thrown for routing", async () => {
  const overloaded = new GatewayError(503, "Overloaded", { code: "upstream_overloaded" });
  const { reader, state } = source([ROLE, chunk({})], overloaded);
  await assert.rejects(untilShown("p", reader, CHAT_START), (err) => err === overloaded);
  assert.equal(state.cancelled, true);
});

Deno.test("stream start: a value the API names a failure is thrown before it commits", async () => {
  const start: StreamStart<string> = {
    shows: (v) => v !== "open",
    failure: (v, provider) => v === "failed" ? new GatewayError(502, `${provider} failed`) : undefined,
  };
  const { reader, state } = source(["open", "failed"]);
  await assert.rejects(untilShown("p", reader, start), /p failed/);
  assert.equal(state.cancelled, true);
});

Deno.test("stream start: an empty stream is a 502; one that ended after values that showed nothing is handed on", async () => {
  await assert.rejects(
    untilShown("p", source<ChatCompletionChunk>([]).reader, CHAT_START),
    /without any data/,
  );
  const { reader } = source([ROLE, chunk({})]);
  const peeked = await untilShown("p", reader, CHAT_START);
  assert.equal(peeked.first, ROLE);
  assert.deepEqual(await drain(peeked.rest), [chunk({})]);
});

Deno.test("stream start: holding is bounded by a count of values, and by a time after the first", async () => {
  const run = Array.from({ length: 40 }, () => chunk({}));
  const counted = source([...run]);
  const peeked = await untilShown("p", counted.reader, CHAT_START, { values: 16, ms: 60_000 });
  assert.equal(counted.state.reads(), 16, "an endless run of empty values is not buffered");
  assert.equal((await drain(peeked.rest)).length, 39);

  // A stream that has shown nothing 10 ms after its first value commits, with the read in progress handed on.
  const timed = source([ROLE, chunk({ content: "Hi" })]);
  const read = timed.reader.read.bind(timed.reader);
  const upstream = Promise.withResolvers<void>();
  timed.reader.read = () => timed.state.reads() === 1 ? upstream.promise.then(read) : read();
  const peeked2 = await untilShown("p", timed.reader, CHAT_START, { values: 16, ms: 10 });
  assert.equal(peeked2.first, ROLE);
  upstream.resolve();
  assert.deepEqual(await drain(peeked2.rest), [chunk({ content: "Hi" })], "the interrupted read is not lost");
  assert.equal(timed.state.reads(), 3);

  // A failure of that read reaches whoever reads the stream, not an unhandled rejection.
  const failing = source([ROLE], new GatewayError(503, "Overloaded"));
  const failRead = failing.reader.read.bind(failing.reader);
  const later = Promise.withResolvers<void>();
  failing.reader.read = () => failing.state.reads() === 1 ? later.promise.then(failRead) : failRead();
  const peeked3 = await untilShown("p", failing.reader, CHAT_START, { values: 16, ms: 10 });
  later.resolve();
  await new Promise((r) => setTimeout(r, 0));
  await assert.rejects(peeked3.rest.read(), /Overloaded/);
});

Deno.test("stream start: cancelling the handed-on stream cancels the upstream", async () => {
  const { reader, state } = source([ROLE, chunk({}), chunk({ content: "Hi" }), chunk({}, "stop")]);
  const peeked = await untilShown("p", reader, CHAT_START);
  await peeked.rest.cancel();
  assert.equal(state.cancelled, true);
});

Deno.test("stream start: a stream that fails while it is held keeps the prompt the held values reported", async () => {
  const started = withReportedPrompt(chunk({ role: "assistant", content: "" }), {
    prompt: 1200,
    cachedRead: 1000,
  });
  const gone = new ClientGoneError();
  const { reader, state } = source([started], gone);
  await assert.rejects(untilShown("p", reader, CHAT_START), (err) => err === gone);
  assert.equal(state.cancelled, true);
  assert.deepEqual(heldPrompt(gone), { prompt: 1200, cachedRead: 1000 });
  // Any other failure is the attempt's, routing's to retry: the upstream counted (and billed) the prompt all
  // the same.
  const failed = new GatewayError(502, "cut");
  await assert.rejects(untilShown("p", source([started], failed).reader, CHAT_START));
  assert.deepEqual(heldPrompt(failed), { prompt: 1200, cachedRead: 1000 });
  // Nothing held reported a prompt: nothing is kept.
  const bare = new GatewayError(502, "cut");
  await assert.rejects(untilShown("p", source([chunk({ role: "assistant" })], bare).reader, CHAT_START));
  assert.equal(heldPrompt(bare), undefined);
});
