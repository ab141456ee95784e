/**
 * A lingering close for Bun's edge. When an answer leaves a chunked request body unread (a 413 past
 * `max_body_size`, a 401 before the body), the connection must close after it; but Bun closes the socket as soon
 * as the answer is written, and a client still uploading then has its writes reset and usually never reads the
 * answer (Deno's fetch: "Broken pipe" for 12 to 18 of 20 ~1 MB bodies on Bun 1.4.5, whether the handler
 * cancelled the body or only released it). Reading the rest after returning the answer does not help: Bun has
 * closed the connection by then, and the read fails. So the edge reads and drops the rest of such a body before
 * it returns the answer (nginx's `lingering_close` does so after its answer), bounded in time and bytes so a
 * client that never stops sending costs at most the bound.
 *
 * A declared (`Content-Length`) body is left as it was: its early answer reached the client 20 times of 20 on
 * Bun 1.4.5 without lingering (the same ~1 MB body and 413), so it costs nothing extra.
 *
 * @module
 */

/** How long the rest of an unread body is read at most before the connection is closed anyway. */
export const LINGER_MS = 2_000;

/** How many bytes of an unread body's rest are read and dropped at most. */
export const LINGER_BYTES = 64 * 1024 * 1024;

/** A request body the edge can drain once the handler has answered. */
export interface LingeringBody {
  /** The body the handler reads; cancelling it leaves the rest to {@linkcode LingeringBody.settle}. */
  readonly body: ReadableStream<Uint8Array>;
  /**
   * Once the handler has answered: with `linger`, reads and drops the rest of the body until its end, for at
   * most `ms` and `bytes`; then lets the rest go (at once without `linger`, if the handler cancelled the body).
   */
  settle(linger: boolean, ms?: number, bytes?: number): Promise<void>;
}

/** Wraps `source` so that the handler's cancel does not reach Bun: the rest is still there to be drained. */
export function lingeringBody(source: ReadableStream<Uint8Array>): LingeringBody {
  const reader = source.getReader();
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      // A read in flight when the handler cancelled: its bytes are the rest's, dropped.
      if (cancelled) return;
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  return {
    body,
    async settle(linger, ms = LINGER_MS, bytes = LINGER_BYTES) {
      if (!linger) {
        // A body the handler gave up (a 408's stalled one) is let go; one it read to the end needs nothing.
        if (cancelled) await reader.cancel().catch(() => {});
        return;
      }
      // Cancelling the source settles a pending read (done), which ends the loop below.
      const deadline = setTimeout(() => reader.cancel().catch(() => {}), ms);
      try {
        let dropped = 0;
        while (dropped <= bytes) {
          const { done, value } = await reader.read();
          if (done) break;
          dropped += value.byteLength;
        }
      } catch {
        // The client went away: nothing is left to wait for.
      } finally {
        clearTimeout(deadline);
        await reader.cancel().catch(() => {});
      }
    },
  };
}
