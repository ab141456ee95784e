import assert from "node:assert/strict";
import { createRingBuffer, ReportRing } from "./report_ring.ts";

Deno.test("report ring: frames come out whole and in order across many wraps, also past 2^31 written bytes", () => {
  for (const start of [0, 2 ** 31 - 100]) {
    const buffer = createRingBuffer(1024);
    // Both positions start where the counters are about to wrap (as after 2 GB of reports).
    new Int32Array(buffer, 0, 2).set([start | 0, start | 0]);
    const writer = new ReportRing(buffer);
    const reader = new ReportRing(buffer);
    const sent: string[] = [];
    const got: string[] = [];
    for (let i = 0; i < 500; i++) {
      const text = JSON.stringify({ n: i, pad: "é".repeat(i % 37), k: "x".repeat(i % 11) });
      assert.ok(writer.write(text), `frame ${i} fits`);
      sent.push(text);
      if (i % 3 === 2) got.push(...reader.read());
    }
    got.push(...reader.read());
    assert.deepEqual(got, sent);
    assert.deepEqual(reader.read(), []);
  }
});

Deno.test("report ring: a frame that does not fit is refused whole, and fits once the reader has read", () => {
  const buffer = createRingBuffer(64);
  const writer = new ReportRing(buffer);
  const reader = new ReportRing(buffer);
  assert.ok(writer.write("a".repeat(40)));
  assert.equal(writer.write("b".repeat(30)), false);
  assert.deepEqual(reader.read(), ["a".repeat(40)]);
  assert.ok(writer.write("b".repeat(30)));
  assert.deepEqual(reader.read(), ["b".repeat(30)]);
  assert.equal(writer.write("c".repeat(61)), false, "larger than the ring");
  assert.throws(() => createRingBuffer(100), RangeError);
});
