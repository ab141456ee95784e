import assert from "node:assert/strict";
import { createInFlightBuffer, SharedInFlight } from "./shared_in_flight.ts";

Deno.test("shared in-flight: max places across workers, given back by each, and all of a dead worker's at once", () => {
  const buffer = createInFlightBuffer(2);
  const w0 = new SharedInFlight(buffer, 2, 0);
  const w1 = new SharedInFlight(buffer, 2, 1);
  const primary = new SharedInFlight(buffer, 2, 0);
  const key = "up|gpt|{}";
  assert.ok(w0.take(key, 3));
  assert.ok(w1.take(key, 3));
  assert.ok(w1.take(key, 3));
  assert.equal(w0.take(key, 3), false, "the fourth place, whichever worker asks");
  assert.equal(w1.take(key, 3), false);
  assert.ok(w0.take("other|model|{}", 1), "another target counts apart");
  w0.give(key);
  assert.ok(w1.take(key, 3), "a place given back is free for any worker");
  // Worker 1 dies holding three places on `key`: the primary gives them back, and its replacement starts clear.
  primary.release(1);
  assert.ok(w0.take(key, 3));
  assert.ok(w0.take(key, 3));
  assert.ok(w0.take(key, 3));
  assert.equal(w0.take(key, 3), false, "worker 0 holds all three now");
  const replacement = new SharedInFlight(buffer, 2, 1);
  primary.release(1);
  assert.equal(replacement.take(key, 3), false, "releasing a clear row gives nothing back twice");
});

Deno.test("shared in-flight: many targets find their own counters", () => {
  const buffer = createInFlightBuffer(1);
  const a = new SharedInFlight(buffer, 1, 0);
  const b = new SharedInFlight(buffer, 1, 0);
  const keys = Array.from({ length: 500 }, (_, i) => `provider-${i}|model-${i % 7}|{"n":${i}}`);
  for (const key of keys) assert.ok(a.take(key, 1), key);
  // Another view (another worker) finds the same counters by the keys' hashes.
  for (const key of keys) assert.equal(b.take(key, 1), false, key);
  for (const key of keys) a.give(key);
  for (const key of keys) assert.ok(b.take(key, 1), key);
});
