/**
 * A reader that passes another reader's values on unchanged while telling a watcher about them: each value
 * before it is handed on, the clean end, and a failure or a cancel (the client gone, a budget stop). The
 * response cache fills its entries this way and a trace learns what the answer said, without either taking a
 * stream stage of its own. One value at a time, read when the consumer reads, so backpressure and cancellation
 * reach the source as before; a plain reader, not a stream, so watching costs no stream layer.
 *
 * @module
 */
import type { ChunkSource } from "../streams/pull_through.ts";

/** What a watcher is told; every callback is optional. */
export interface ReaderWatcher<T> {
  /** A value, before it is handed on. */
  value?(value: T): void;
  /** The source ended cleanly. */
  done?(): void;
  /** The source failed, or the reader was cancelled. */
  failed?(): void;
}

/** `source` passed on through a new reader, with `watcher` told about what passes (each ending once). */
export function watchedReader<T>(source: ChunkSource<T>, watcher: ReaderWatcher<T>): ChunkSource<T> {
  /** How the reader ended: later reads answer the same without telling the watcher again. */
  let ended: { done: true } | { failure: unknown } | undefined;
  return {
    async read() {
      if (ended !== undefined) {
        if ("failure" in ended) throw ended.failure;
        return { done: true, value: undefined };
      }
      let next: ReadableStreamReadResult<T>;
      try {
        next = await source.read();
      } catch (err) {
        ended = { failure: err };
        watcher.failed?.();
        throw err;
      }
      if (next.done) {
        ended = { done: true };
        watcher.done?.();
        return next;
      }
      watcher.value?.(next.value);
      return next;
    },
    async cancel(reason) {
      if (ended !== undefined) return;
      ended = { done: true };
      watcher.failed?.();
      await source.cancel(reason);
    },
  };
}
