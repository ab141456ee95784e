import assert from "node:assert/strict";
import { type ChunkSource, pullStages, pullThrough, stages, type SyncTransformer } from "./pull_through.ts";
import { sseParseTransformer } from "../sse/parse.ts";
import { openAIChunkTransformer } from "../providers/openai/stream.ts";

const encoder = new TextEncoder();

/** A source that records how often it was pulled and why it was cancelled. */
function source<T>(items: T[]) {
  const log = { pulls: 0, cancelled: undefined as unknown, wasCancelled: false };
  let i = 0;
  const stream = new ReadableStream<T>({
    pull(controller) {
      log.pulls++;
      if (i < items.length) controller.enqueue(items[i++]);
      else controller.close();
    },
    cancel(reason) {
      log.wasCancelled = true;
      log.cancelled = reason;
    },
  }, { highWaterMark: 0 });
  return { stream, log };
}

async function collect<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

function chunkEvent(content: string, finish: string | null = null): string {
  const chunk = {
    id: "c",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

const WIRE = chunkEvent("Hel") + ": keep-alive\n\n" + chunkEvent("lo") + chunkEvent("", "stop") +
  "data: [DONE]\n\n";

/** The wire split into pieces at the given offsets. */
function split(text: string, cuts: number[]): Uint8Array[] {
  const bytes = encoder.encode(text);
  const points = [0, ...cuts.filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b), bytes.length];
  const out: Uint8Array[] = [];
  for (let i = 1; i < points.length; i++) {
    if (points[i] > points[i - 1]) out.push(bytes.slice(points[i - 1], points[i]));
  }
  return out;
}

Deno.test("pullThrough: the same chunks as pipeThrough through the same stages, however the bytes are split", async () => {
  const length = encoder.encode(WIRE).length;
  for (let cut = 1; cut < length; cut += 7) {
    const pieces = split(WIRE, [cut, cut + 3, cut + 50]);
    const piped = await collect(
      source(pieces).stream.pipeThrough(new TransformStream(sseParseTransformer()))
        .pipeThrough(new TransformStream(openAIChunkTransformer("p"))),
    );
    const pulled = await collect(
      pullThrough(source(pieces).stream, sseParseTransformer(), openAIChunkTransformer("p")),
    );
    assert.deepEqual(pulled, piped, `cut at ${cut}`);
    assert.deepEqual(pulled.map((c) => c.choices[0].delta), [{ content: "Hel" }, { content: "lo" }, {
      content: "",
    }]);
  }
});

Deno.test("pullThrough: nothing is read from the source before the consumer asks (backpressure)", async () => {
  const { stream, log } = source(split(WIRE, [10, 200, 300]));
  const reader = pullThrough(stream, sseParseTransformer()).getReader();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(log.pulls, 0);
  const first = await reader.read();
  assert.equal(first.done, false);
  // Only as many source chunks as it took to complete the first event.
  assert.ok(log.pulls <= 2, `${log.pulls} pulls`);
  await reader.cancel("bye");
});

Deno.test("pullThrough: cancelling the result cancels the source with the reason", async () => {
  const { stream, log } = source(split(WIRE, [5]));
  const reader = pullThrough(stream, sseParseTransformer()).getReader();
  await reader.read();
  await reader.cancel("client went away");
  assert.equal(log.wasCancelled, true);
  assert.equal(log.cancelled, "client went away");
});

Deno.test("pullThrough: a stage that throws errors the result with its error and cancels the source", async () => {
  const { stream, log } = source(split("data: {not json}\n\n" + WIRE, []));
  const result = pullThrough(stream, sseParseTransformer(), openAIChunkTransformer("p"));
  await assert.rejects(() => collect(result), /not JSON/);
  assert.equal(log.wasCancelled, true);
});

Deno.test("pullThrough: terminate() ends the result after the later stages flush, and cancels the source", async () => {
  // [DONE] terminates the chunk stage; what follows it on the wire is never parsed into chunks.
  const trailing = WIRE + chunkEvent("after done");
  const { stream, log } = source(split(trailing, [40]));
  const flushed: string[] = [];
  const tail: SyncTransformer<{ choices: unknown[] }, string> = {
    transform: (chunk, c) => c.enqueue(JSON.stringify(chunk.choices)),
    flush: (c) => {
      flushed.push("tail");
      c.enqueue("end");
    },
  };
  const out = await collect(pullThrough(stream, sseParseTransformer(), openAIChunkTransformer("p"), tail));
  assert.equal(out.length, 4);
  assert.equal(out.at(-1), "end");
  assert.ok(!out.some((s) => s.includes("after done")));
  assert.deepEqual(flushed, ["tail"]);
  assert.equal(log.wasCancelled, true);
});

Deno.test("pullThrough: at the end every stage is flushed in order, and a flush may still emit", async () => {
  const order: string[] = [];
  const stage = (name: string): SyncTransformer<string, string> => ({
    transform: (s, c) => c.enqueue(`${s}>${name}`),
    flush: (c) => {
      order.push(name);
      c.enqueue(`${name}-flush`);
    },
  });
  const out = await collect(pullThrough(source(["x"]).stream, stage("a"), stage("b")));
  assert.deepEqual(order, ["a", "b"]);
  assert.deepEqual(out, ["x>a>b", "a-flush>b", "b-flush"]);
});

Deno.test("pullThrough: a stream cut before [DONE] errors like pipeThrough does", async () => {
  const cut = chunkEvent("partial");
  const piped = collect(
    source([encoder.encode(cut)]).stream.pipeThrough(new TransformStream(sseParseTransformer())).pipeThrough(
      new TransformStream(openAIChunkTransformer("p")),
    ),
  );
  const pulled = collect(
    pullThrough(source([encoder.encode(cut)]).stream, sseParseTransformer(), openAIChunkTransformer("p")),
  );
  await assert.rejects(() => piped, /before it was complete/);
  await assert.rejects(() => pulled, /before it was complete/);
});

Deno.test("pullThrough: chunks a stage passed on before failing are delivered before the error", async () => {
  // One source read holds a good chunk and then a bad one: the good one must reach the consumer first.
  const { stream, log } = source([encoder.encode(chunkEvent("Partial") + "data: {bad}\n\n")]);
  const reader = pullThrough(stream, sseParseTransformer(), openAIChunkTransformer("p")).getReader();
  const first = await reader.read();
  assert.equal(first.done, false);
  assert.deepEqual(first.value?.choices[0].delta, { content: "Partial" });
  assert.equal(log.wasCancelled, true, "the source is cancelled at once");
  await assert.rejects(() => reader.read(), /not JSON/);
});

Deno.test("pullStages: a reader over the stages, reading the source only as it is read", async () => {
  const { stream, log } = source(["a b", "c"]);
  const words: SyncTransformer<string, string> = {
    transform: (text, controller) => text.split(" ").forEach((w) => controller.enqueue(w)),
  };
  const reader = pullStages(stream, stages(words));
  assert.equal(log.pulls, 0, "nothing is read before the first read");
  assert.deepEqual(await reader.read(), { done: false, value: "a" });
  // "b" came out of the same source chunk: the next read takes it without reading the source again.
  const pullsAfterA = log.pulls;
  assert.deepEqual(await reader.read(), { done: false, value: "b" });
  assert.equal(log.pulls, pullsAfterA);
  assert.deepEqual(await reader.read(), { done: false, value: "c" });
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
});

Deno.test("pullStages: cancelling the reader cancels the source with the reason, and later reads are done", async () => {
  const { stream, log } = source(["a", "b", "c"]);
  const pass: SyncTransformer<string, string> = { transform: (t, c) => c.enqueue(t) };
  const reader = pullStages(stream, stages(pass));
  assert.deepEqual(await reader.read(), { done: false, value: "a" });
  await reader.cancel("client gone");
  assert.equal(log.wasCancelled, true);
  assert.equal(log.cancelled, "client gone");
  assert.deepEqual(await reader.read(), { done: true, value: undefined });
});

Deno.test("pullStages: a failing stage delivers what it passed on, then rejects every later read", async () => {
  const { stream, log } = source(["a", "b"]);
  const boom: SyncTransformer<string, string> = {
    transform(t, c) {
      c.enqueue(t);
      if (t === "b") throw new Error("bad chunk");
    },
  };
  const reader = pullStages(stream, stages(boom));
  assert.deepEqual(await reader.read(), { done: false, value: "a" });
  assert.deepEqual(await reader.read(), { done: false, value: "b" });
  assert.equal(log.wasCancelled, true, "the source is let go at the failure");
  await assert.rejects(reader.read(), /bad chunk/);
  await assert.rejects(reader.read(), /bad chunk/);
});

Deno.test("pullStages: a reader source that ends by itself is not cancelled; one a stage stops early is", async () => {
  const plain = (items: string[]) => {
    const log = { cancels: 0 };
    let i = 0;
    return {
      log,
      source: {
        read: () =>
          Promise.resolve(
            i < items.length ? { done: false as const, value: items[i++] } : { done: true as const },
          ),
        cancel: () => {
          log.cancels++;
          return Promise.resolve();
        },
      },
    };
  };
  const pass: SyncTransformer<string, string> = { transform: (t, c) => c.enqueue(t) };
  const ended = plain(["a", "b"]);
  const all = pullStages(ended.source as ChunkSource<string>, stages(pass));
  while (!(await all.read()).done) { /* to the end */ }
  assert.equal(ended.log.cancels, 0, "a finished source has nothing to release");

  const stopAtB: SyncTransformer<string, string> = {
    transform: (t, c) => t === "b" ? c.terminate() : c.enqueue(t),
  };
  const stopped = plain(["a", "b", "c"]);
  const some = pullStages(stopped.source as ChunkSource<string>, stages(stopAtB));
  while (!(await some.read()).done) { /* to the stop */ }
  assert.equal(stopped.log.cancels, 1, "a source still open when the stages stop is let go");
});
