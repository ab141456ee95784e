import assert from "node:assert/strict";
import { lingeringBody } from "./bun_linger.ts";

/** A source of `chunks` 1 KiB chunks (endless when undefined, silent after them when `silent`) that records a cancel. */
function source(chunks: number | undefined, silent = false) {
  const seen = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (chunks !== undefined && seen.pulled >= chunks) {
        // A silent client: the read stays pending until the source is cancelled.
        if (silent) return new Promise<void>(() => {});
        controller.close();
        return;
      }
      seen.pulled++;
      controller.enqueue(new Uint8Array(1024));
    },
    cancel() {
      seen.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, seen };
}

Deno.test("lingeringBody: the handler's cancel does not reach the source; settle drains the rest to its end", async () => {
  const { stream, seen } = source(10);
  const lingering = lingeringBody(stream);
  const reader = lingering.body.getReader();
  assert.equal((await reader.read()).value?.byteLength, 1024);
  await reader.cancel();
  assert.equal(seen.cancelled, false);
  await lingering.settle(true);
  assert.equal(seen.pulled, 10);
});

Deno.test("lingeringBody: settle stops after its byte bound and cancels the source", async () => {
  const { stream, seen } = source(undefined);
  const lingering = lingeringBody(stream);
  await lingering.body.cancel();
  await lingering.settle(true, 60_000, 10 * 1024);
  assert.equal(seen.pulled, 11);
  assert.equal(seen.cancelled, true);
});

Deno.test("lingeringBody: settle stops after its time bound on a silent client and cancels the source", async () => {
  const { stream, seen } = source(3, true);
  const lingering = lingeringBody(stream);
  await lingering.body.cancel();
  await lingering.settle(true, 10, Number.MAX_SAFE_INTEGER);
  assert.equal(seen.pulled, 3);
  assert.equal(seen.cancelled, true);
});

Deno.test("lingeringBody: without lingering, a cancelled body's source is cancelled; a body read whole is left", async () => {
  const cancelled = source(undefined);
  const gaveUp = lingeringBody(cancelled.stream);
  await gaveUp.body.cancel();
  await gaveUp.settle(false);
  assert.equal(cancelled.seen.cancelled, true);

  const whole = source(2);
  const read = lingeringBody(whole.stream);
  assert.equal((await new Response(read.body).arrayBuffer()).byteLength, 2048);
  await read.settle(false);
  assert.equal(whole.seen.cancelled, false);
});
