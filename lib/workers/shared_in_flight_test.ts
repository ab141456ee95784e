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

/** Takes and gives back a place on each of `count` distinct targets, so each has a counter in the table. */
function fill(view: SharedInFlight, count: number, prefix: string): void {
  for (let i = 0; i < count; i++) {
    assert.ok(view.take(`${prefix}-${i}|m|{}`, 1));
    view.give(`${prefix}-${i}|m|{}`);
  }
}

Deno.test("shared in-flight: with every counter in use, a new target is held per worker, never not at all", () => {
  const buffer = createInFlightBuffer(2);
  const w0 = new SharedInFlight(buffer, 2, 0);
  const w1 = new SharedInFlight(buffer, 2, 1);
  fill(w0, 1024, "old");
  const late = "late|m|{}";
  assert.ok(w0.take(late, 1));
  assert.equal(w0.take(late, 1), false, "max_in_flight 1 on this worker");
  assert.ok(w1.take(late, 1), "the other worker holds its own");
  assert.equal(w1.take(late, 1), false);
  w0.give(late);
  assert.ok(w0.take(late, 1), "a place given back is free again");
});

Deno.test("shared in-flight: after a reload the primary frees the counters of targets gone, once nobody holds them", () => {
  const buffer = createInFlightBuffer(2);
  const w0 = new SharedInFlight(buffer, 2, 0);
  const w1 = new SharedInFlight(buffer, 2, 1);
  const primary = new SharedInFlight(buffer, 2, 2);
  const busy = "busy|m|{}";
  assert.ok(w0.take(busy, 1), "a request of the old config still running");
  fill(w0, 1023, "old");
  // The new config has none of them: every counter but the held one is freed.
  assert.equal(primary.retain(["new-0|m|{}"]), 1023);
  const fresh = "fresh|m|{}";
  assert.ok(w0.take(fresh, 1));
  assert.equal(w1.take(fresh, 1), false, "a new target is held across the workers again");
  assert.equal(w1.take(busy, 1), false, "the held counter was kept");
  w0.give(busy);
  assert.ok(w1.take(busy, 1), "and given back there");
  w1.give(busy);
  assert.equal(primary.retain([fresh]), 1, "freed at the next reload once given back");
  assert.equal(w1.take(fresh, 1), false, "a live target's counter is kept, with its places");
  w0.give(fresh);
  assert.ok(w1.take(fresh, 1));
  // A dead worker's places are still given back after frees.
  primary.release(1);
  assert.ok(w0.take(fresh, 1));
  // Many reloads of rotated targets never run out of counters.
  for (let round = 0; round < 5; round++) {
    fill(w0, 600, `round-${round}`);
    primary.retain([fresh]);
  }
  const last = "last|m|{}";
  assert.ok(w0.take(last, 1));
  assert.equal(w1.take(last, 1), false);
});

Deno.test("shared in-flight: taken reads the places of every worker and claims no counter", () => {
  const buffer = createInFlightBuffer(2);
  const w0 = new SharedInFlight(buffer, 2, 0);
  const w1 = new SharedInFlight(buffer, 2, 1);
  assert.equal(w1.taken("never|taken|{}"), 0);
  assert.ok(w0.take("a|m|{}", 5));
  assert.ok(w0.take("a|m|{}", 5));
  assert.ok(w1.take("a|m|{}", 5));
  assert.equal(w1.taken("a|m|{}"), 3);
  assert.equal(w0.taken("a|m|{}"), 3);
  w0.give("a|m|{}");
  assert.equal(w1.taken("a|m|{}"), 2);
  // A read claimed nothing: the primary frees only counters of targets no longer configured, and finds none.
  assert.equal(new SharedInFlight(buffer, 2, 2).retain(["a|m|{}"]), 0);
});
