/**
 * The bounded span queue: what it cannot hold or export is dropped and counted, never waited for; a flush sends
 * what waits; shutdown stops it; abandon counts what is left.
 */
import assert from "node:assert/strict";
import { type ExportResult, ExportResultCode } from "@opentelemetry/core";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  type SpanExporter,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { BoundedSpanQueue } from "./span_queue.ts";

/** An exporter that answers as told (or never). */
function scripted(answer: "ok" | "fail" | "never"): SpanExporter & { batches: number[] } {
  const batches: number[] = [];
  return {
    batches,
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      batches.push(spans.length);
      if (answer === "ok") done({ code: ExportResultCode.SUCCESS });
      else if (answer === "fail") done({ code: ExportResultCode.FAILED });
    },
    shutdown: () => Promise.resolve(),
  };
}

function tracing(exporter: SpanExporter, maxQueue: number, timeoutMs = 1_000, maxBatch = 3) {
  let dropped = 0;
  const queue = new BoundedSpanQueue({
    exporter,
    maxQueue,
    maxBatch,
    intervalMs: 60_000,
    timeoutMs,
    dropped: (n) => dropped += n,
  });
  const provider = new TracerProvider({ spanProcessors: [queue] });
  const tracer = provider.getTracer("test");
  const emit = (n: number) => {
    for (let i = 0; i < n; i++) tracer.startSpan(`s${i}`).end();
  };
  return { queue, provider, emit, dropped: () => dropped };
}

Deno.test("span queue: spans past the bound are dropped and counted, never waited for", async () => {
  const hanging = scripted("never");
  const t = tracing(hanging, 6, 30);
  t.emit(10);
  // One full batch (3) went out and hangs; 6 wait in the queue; the last one found it full.
  assert.deepEqual(hanging.batches, [3]);
  assert.equal(t.dropped(), 1);
  t.queue.abandon();
  assert.equal(t.dropped(), 7, "what was still queued is counted when abandoned");
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(t.dropped(), 10, "the hanging batch timed out and was counted");
  await t.provider.shutdown();
});

Deno.test("span queue: a flush exports what waits, in batches", async () => {
  const memory = new InMemorySpanExporter();
  const t = tracing(memory, 100);
  t.emit(8);
  await t.queue.forceFlush();
  assert.equal(memory.getFinishedSpans().length, 8);
  assert.equal(t.dropped(), 0);
  await t.provider.shutdown();
});

Deno.test("span queue: a failed export drops its batch, counted", async () => {
  const failing = scripted("fail");
  const t = tracing(failing, 10);
  t.emit(4);
  await t.queue.forceFlush();
  assert.deepEqual(failing.batches, [3, 1]);
  assert.equal(t.dropped(), 4);
  await t.provider.shutdown();
});

Deno.test("span queue: an export that never answers times out, its batch counted, the flush returns", async () => {
  const hanging = scripted("never");
  const t = tracing(hanging, 10, 30);
  t.emit(2);
  await t.queue.forceFlush();
  assert.equal(t.dropped(), 2);
  await t.provider.shutdown();
});

Deno.test("span queue: after shutdown nothing is taken; abandon counts what was left", async () => {
  const memory = new InMemorySpanExporter();
  const t = tracing(memory, 10);
  t.emit(2);
  t.queue.abandon();
  assert.equal(t.dropped(), 2);
  t.emit(1);
  assert.equal(t.dropped(), 2, "a closed queue takes nothing (and counts nothing it never took)");
  await t.provider.shutdown();
  assert.equal(memory.getFinishedSpans().length, 0);
});

Deno.test("span queue: a full batch goes at once, without waiting for the timer", async () => {
  const memory = new InMemorySpanExporter();
  const t = tracing(memory, 100);
  t.emit(7);
  // maxBatch is 3 and the timer an hour away: two full batches went, one span waits.
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(memory.getFinishedSpans().length, 6);
  assert.equal(t.dropped(), 0);
  await t.provider.shutdown();
  assert.equal(memory.getFinishedSpans().length, 0, "the exporter was reset at shutdown");
});

Deno.test("span queue: a queue smaller than the batch size still sends early, so a healthy collector loses nothing", async () => {
  // The gateway's batch size is 512; a max_queue of 8 could never hold a full batch, so nothing went out before
  // the timer (an hour away here) and all but 8 spans were dropped with a collector answering at once.
  const memory = new InMemorySpanExporter();
  const t = tracing(memory, 8, 1_000, 512);
  // Spans end a few at a time (a request's), with the event loop turning between them.
  for (let i = 0; i < 25; i++) {
    t.emit(4);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  assert.equal(t.dropped(), 0);
  await t.queue.forceFlush();
  assert.equal(memory.getFinishedSpans().length, 100);
  await t.provider.shutdown();
});
