import assert from "node:assert/strict";
import { BLOCK_BYTES, FIRST_BLOCK_BYTES, readWithin } from "./read_within.ts";

/**
 * A body of `chunks`, as a byte stream (Deno's fetch body: a BYOB reader fills the reader's own buffer) or a
 * plain one (Bun's), recording how often it was pulled and whether it was cancelled.
 */
function body(chunks: Uint8Array[], kind: "bytes" | "plain") {
  const log = { pulls: 0, cancelled: false };
  let i = 0;
  const pull = (controller: ReadableStreamDefaultController<Uint8Array> | ReadableByteStreamController) => {
    log.pulls++;
    if (i < chunks.length) return controller.enqueue(chunks[i++].slice());
    controller.close();
    // A byte stream closed under a pending BYOB read settles it only once that read is answered (with 0 bytes).
    if ("byobRequest" in controller) controller.byobRequest?.respond(0);
  };
  const cancel = () => {
    log.cancelled = true;
  };
  const stream = kind === "bytes"
    ? new ReadableStream({ type: "bytes", pull, cancel }, { highWaterMark: 0 })
    : new ReadableStream<Uint8Array>({ pull, cancel }, { highWaterMark: 0 });
  return { stream: stream as ReadableStream<Uint8Array>, log };
}

/** `n` bytes counting up, so a byte out of place shows. */
function counting(n: number, from = 0): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (from + i) % 251);
}

for (const kind of ["bytes", "plain"] as const) {
  Deno.test(`readWithin (${kind}): a body within the limit comes back whole, in order, across blocks`, async () => {
    const sizes = [1, 4096, FIRST_BLOCK_BYTES, 3 * BLOCK_BYTES + 17, 5];
    let at = 0;
    const chunks = sizes.map((n) => {
      const chunk = counting(n, at);
      at += n;
      return chunk;
    });
    const { stream } = body(chunks, kind);
    const bytes = await readWithin(stream, 16 * 1024 * 1024);
    assert.deepEqual(bytes, counting(at));
  });

  Deno.test(`readWithin (${kind}): exactly the limit fits; one byte more is refused and the body cancelled`, async () => {
    const limit = FIRST_BLOCK_BYTES + BLOCK_BYTES + 3;
    const fits = body([counting(limit - 3), counting(3, limit - 3)], kind);
    assert.deepEqual(await readWithin(fits.stream, limit), counting(limit));
    assert.equal(fits.log.cancelled, false);

    const over = body(
      [counting(limit), counting(1), ...Array.from({ length: 100 }, () => counting(4096))],
      kind,
    );
    assert.equal(await readWithin(over.stream, limit), undefined);
    assert.equal(over.log.cancelled, true);
    assert.ok(over.log.pulls <= 3, `nothing is read past the limit (${over.log.pulls} pulls)`);
  });

  Deno.test(`readWithin (${kind}): an empty body, and a limit of 0`, async () => {
    assert.deepEqual(await readWithin(body([], kind).stream, 1024), new Uint8Array(0));
    assert.deepEqual(await readWithin(body([], kind).stream, 0), new Uint8Array(0));
    assert.equal(await readWithin(body([counting(1)], kind).stream, 0), undefined);
  });

  Deno.test(`readWithin (${kind}): a read's error is thrown as it is`, async () => {
    const failure = new Error("connection reset");
    const stream = new ReadableStream<Uint8Array>({
      ...(kind === "bytes" ? { type: "bytes" } as const : {}),
      pull: (controller) => controller.error(failure),
    });
    await assert.rejects(readWithin(stream, 1024), (err) => err === failure);
  });
}

Deno.test("readWithin: a chunk that is a view on a larger buffer is copied, not kept with that buffer", async () => {
  // Deno's fetch hands out each decompressed 4 KiB inside the 64 KiB buffer it read into.
  const big = new Uint8Array(65536);
  big.set(counting(4096), 1000);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(big.subarray(1000, 1000 + 4096));
      controller.close();
    },
  });
  const bytes = await readWithin(stream, 1024 * 1024);
  assert.deepEqual(bytes, counting(4096));
  assert.equal(bytes?.buffer.byteLength, 4096);
});
