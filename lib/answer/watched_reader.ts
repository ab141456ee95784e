/**
 * A reader that passes another reader's values on unchanged while telling a watcher about them: each value
 * before it is handed on, the clean end, and a failure or a cancel (the client gone, a budget stop). The
 * response cache fills its entries this way and a trace learns what the answer said, without either taking a
 * stream stage of its own. One value at a time (`highWaterMark: 0`), so backpressure and cancellation reach the
 * source as before.
 *
 * @module
 */

/** What a watcher is told; every callback is optional. */
export interface ReaderWatcher<T> {
  /** A value, before it is handed on. */
  value?(value: T): void;
  /** The source ended cleanly. */
  done?(): void;
  /** The source failed, or the reader was cancelled. */
  failed?(): void;
}

/** `source` passed on through a new reader, with `watcher` told about what passes. */
export function watchedReader<T>(
  source: ReadableStreamDefaultReader<T>,
  watcher: ReaderWatcher<T>,
): ReadableStreamDefaultReader<T> {
  return new ReadableStream<T>({
    async pull(controller) {
      let next: ReadableStreamReadResult<T>;
      try {
        next = await source.read();
      } catch (err) {
        watcher.failed?.();
        controller.error(err);
        return;
      }
      if (next.done) {
        watcher.done?.();
        controller.close();
        return;
      }
      watcher.value?.(next.value);
      controller.enqueue(next.value);
    },
    cancel(reason) {
      watcher.failed?.();
      return source.cancel(reason);
    },
  }, { highWaterMark: 0 }).getReader();
}
