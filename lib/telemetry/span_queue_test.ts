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

function tracing(exporter: SpanExporter, maxQueue: number, timeoutMs = 1_000) {
  let dropped = 0;
  const queue = new BoundedSpanQueue({
    exporter,
    maxQueue,
    maxBatch: 3,
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

Deno.test("span queue: spans past the bound are dropped and counted; a flush exports the rest in batches", async () => {
  const memory = new InMemorySpanExporter();
  const t = tracing(memory, 5);
  t.emit(8);
  assert.equal(t.dropped(), 3);
  await t.queue.forceFlush();
  assert.equal(memory.getFinishedSpans().length, 5);
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
