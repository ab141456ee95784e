import assert from "node:assert/strict";
import { BoundedQueue } from "./queue.ts";

Deno.test("bounded queue: FIFO, refuses past capacity, wraps around", () => {
  const q = new BoundedQueue<number>(3);
  assert.equal(q.push(1), true);
  assert.equal(q.push(2), true);
  assert.equal(q.push(3), true);
  assert.equal(q.full, true);
  assert.equal(q.push(4), false, "full: refused, not grown");
  assert.equal(q.length, 3);
  assert.deepEqual(q.take(2), [1, 2]);
  assert.equal(q.push(5), true);
  assert.equal(q.push(6), true);
  assert.deepEqual(q.take(10), [3, 5, 6]);
  assert.equal(q.length, 0);
  assert.deepEqual(q.take(1), []);
});

Deno.test("bounded queue: rejects a non-positive capacity", () => {
  assert.throws(() => new BoundedQueue(0), RangeError);
  assert.throws(() => new BoundedQueue(1.5), RangeError);
});
