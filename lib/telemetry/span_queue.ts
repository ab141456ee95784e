/**
 * The span processor between the tracer and the OTLP exporter: ended spans wait in a bounded queue and go out
 * in batches on a timer, one export at a time. A span that finds the queue full, or whose batch the collector
 * refused, failed or did not answer within the export timeout, is dropped and counted
 * (`gateway_telemetry_dropped_total{signal="traces"}`), never waited for: a slow or absent collector costs a
 * request nothing. (The SDK's own batch processor drops silently; operators need the count.)
 *
 * @module
 */
import type { Context } from "@opentelemetry/api";
import { ExportResultCode } from "@opentelemetry/core";
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from "@opentelemetry/sdk-trace";

/** Options of {@linkcode BoundedSpanQueue}. */
export interface SpanQueueOptions {
  exporter: SpanExporter;
  /** Spans held at most. */
  maxQueue: number;
  /** Spans per export at most (and at most half of `maxQueue`: see {@linkcode BoundedSpanQueue}). */
  maxBatch: number;
  /** How often a batch is sent. */
  intervalMs: number;
  /** An export not answered within this counts as failed. */
  timeoutMs: number;
  /** Called with how many spans were dropped. */
  dropped: (count: number) => void;
}

/**
 * A bounded, batching span processor that counts what it drops. A batch is at most half the queue: a batch
 * larger than the queue could never fill, so nothing would go out before the timer and a busy gateway dropped
 * all but `maxQueue` spans per interval with a healthy collector (max_queue 400 lost ~88%); at half, one batch
 * is on its way while the other half takes the spans that end meanwhile.
 */
export class BoundedSpanQueue implements SpanProcessor {
  #queue: ReadableSpan[] = [];
  #timer: ReturnType<typeof setInterval> | undefined;
  #exporting: Promise<void> | undefined;
  #closed = false;
  readonly #batch: number;

  constructor(private readonly options: SpanQueueOptions) {
    this.#batch = Math.max(1, Math.min(options.maxBatch, Math.floor(options.maxQueue / 2)));
  }

  onStart(_span: Span, _parent: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.#closed || (span.spanContext().traceFlags & 1) === 0) return;
    if (this.#queue.length >= this.options.maxQueue) {
      this.options.dropped(1);
      return;
    }
    this.#queue.push(span);
    // A full batch goes at once (a busy gateway must not wait for the timer and overflow the queue); the timer
    // sends what is left, and runs only while something waits, so an idle gateway keeps no timer alive.
    if (this.#queue.length >= this.#batch) void this.#exportNext();
    this.#timer ??= setInterval(() => void this.#exportNext(), this.options.intervalMs);
  }

  /** Sends one batch unless one is on its way; stops the timer once the queue is empty. */
  #exportNext(): Promise<void> {
    if (this.#exporting !== undefined) return this.#exporting;
    if (this.#queue.length === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
      return Promise.resolve();
    }
    const batch = this.#queue.splice(0, this.#batch);
    this.#exporting = new Promise<void>((resolve) => {
      let settled = false;
      const done = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!ok) this.options.dropped(batch.length);
        resolve();
      };
      const timer = setTimeout(() => done(false), this.options.timeoutMs);
      try {
        this.options.exporter.export(batch, (result) => done(result.code === ExportResultCode.SUCCESS));
      } catch {
        done(false);
      }
    }).finally(() => {
      this.#exporting = undefined;
      // More than a batch piled up while this one was out: the next goes now, not at the next tick.
      if (this.#queue.length >= this.#batch && !this.#closed) void this.#exportNext();
    });
    return this.#exporting;
  }

  /** Exports everything queued (batch after batch), each export bounded by the timeout. */
  async forceFlush(): Promise<void> {
    while (this.#queue.length > 0 || this.#exporting !== undefined) await this.#exportNext();
  }

  /** Flushes, then stops taking spans and shuts the exporter down. */
  async shutdown(): Promise<void> {
    await this.forceFlush();
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.options.exporter.shutdown().catch(() => {});
  }

  /** Drops what is still queued (shutdown's grace ran out), counting it. */
  abandon(): void {
    if (this.#queue.length > 0) this.options.dropped(this.#queue.length);
    this.#queue = [];
    this.#closed = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
