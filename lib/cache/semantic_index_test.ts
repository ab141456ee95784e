/**
 * The semantic index: unit vectors, the best match at or above the threshold within one context, expiry, the
 * entry bound, replacement and forgetting. The clock is injected, so expiry is exact.
 */
import assert from "node:assert/strict";
import { SemanticIndex, unitVector } from "./semantic_index.ts";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

/** A unit vector, asserted to exist. */
function unit(vector: number[]): Float32Array {
  const u = unitVector(vector);
  assert.ok(u, `no unit vector for ${vector}`);
  return u;
}

const close = (a: number, b: number, what = "") => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} vs ${b}`);

Deno.test("semantic index: unitVector normalises to float32 of length 1", () => {
  const u = unit([3, 4]);
  assert.ok(u instanceof Float32Array);
  close(u[0], 0.6, "x");
  close(u[1], 0.8, "y");
  const v = unit([1, -2, 3, -4, 5]);
  close(v.reduce((sum, x) => sum + x * x, 0), 1, "norm");
  assert.equal(v.length, 5);
  // scaling does not change it
  const w = unit([10, -20, 30, -40, 50]);
  for (let i = 0; i < v.length; i++) close(v[i], w[i], `component ${i}`);
  // the input is not modified
  const input = [3, 4];
  unitVector(input);
  assert.deepEqual(input, [3, 4]);
});

Deno.test("semantic index: unitVector rejects empty, zero and non-finite vectors", () => {
  assert.equal(unitVector([]), undefined);
  assert.equal(unitVector([0, 0, 0]), undefined);
  assert.equal(unitVector([1, Number.NaN]), undefined);
  assert.equal(unitVector([Number.POSITIVE_INFINITY, 1]), undefined);
  assert.equal(unitVector([Number.NEGATIVE_INFINITY]), undefined);
});

Deno.test("semantic index: find takes the best match at or above the threshold", () => {
  const index = new SemanticIndex(10, clock().now);
  index.add("ctx", unit([1, 0, 0]), "x", 60_000);
  index.add("ctx", unit([1, 1, 0]), "xy", 60_000);
  index.add("ctx", unit([0, 1, 0]), "y", 60_000);
  const probe = unit([1, 0.1, 0]);
  const best = index.find("ctx", probe, 0.5);
  assert.equal(best?.key, "x");
  close(best!.similarity, 1 / Math.sqrt(1.01), "similarity");
  // y is 0.0995 similar: below any sensible threshold; xy is ~0.77
  assert.equal(index.find("ctx", unit([0, 1, 0.01]), 0.99)?.key, "y");
  assert.equal(index.find("ctx", unit([1, 1, 0.001]), 0.99)?.key, "xy");
  assert.equal(index.size, 3);
});

Deno.test("semantic index: nothing below the threshold", () => {
  const index = new SemanticIndex(10, clock().now);
  index.add("ctx", unit([1, 0]), "x", 60_000);
  const probe = unit([1, 1]); // similarity 0.7071
  assert.equal(index.find("ctx", probe, 0.71), undefined);
  assert.equal(index.find("ctx", probe, 0.7)?.key, "x");
  assert.equal(index.find("ctx", unit([-1, 0]), 0), undefined, "opposite: -1");
});

Deno.test("semantic index: only the same context matches", () => {
  const index = new SemanticIndex(10, clock().now);
  index.add("ctx-a", unit([1, 0]), "a", 60_000);
  assert.equal(index.find("ctx-b", unit([1, 0]), 0.5), undefined);
  assert.equal(index.find("ctx-a", unit([1, 0]), 0.5)?.key, "a");
  index.add("ctx-b", unit([0.9, 0.1]), "b", 60_000);
  assert.equal(index.find("ctx-b", unit([1, 0]), 0.5)?.key, "b", "not a, though a is more similar");
});

Deno.test("semantic index: vectors of different lengths never match", () => {
  const index = new SemanticIndex(10, clock().now);
  index.add("ctx", unit([1, 0, 0]), "three", 60_000);
  // 0 is the lowest threshold the config allows (a length mismatch scores -1, so a threshold of -1 would pass)
  assert.equal(index.find("ctx", unit([1, 0]), 0), undefined, "not even at the lowest threshold");
  assert.equal(index.find("ctx", unit([1, 0, 0, 0]), 0), undefined);
  assert.equal(index.find("ctx", unit([1, 0, 0]), 0.9)?.key, "three");
});

Deno.test("semantic index: expired entries are not found and are removed", () => {
  const c = clock();
  const index = new SemanticIndex(10, c.now);
  index.add("ctx", unit([1, 0]), "short", 1_000);
  index.add("ctx", unit([0.99, 0.01]), "long", 5_000);
  assert.equal(index.find("ctx", unit([1, 0]), 0.9)?.key, "short");
  c.advance(999);
  assert.equal(index.find("ctx", unit([1, 0]), 0.9)?.key, "short", "still live 1 ms before its end");
  c.advance(1);
  assert.equal(index.find("ctx", unit([1, 0]), 0.9)?.key, "long", "expired at its ttl");
  assert.equal(index.size, 1, "the expired entry is removed");
  c.advance(4_000);
  assert.equal(index.find("ctx", unit([1, 0]), 0.9), undefined);
  assert.equal(index.size, 0);
  // the emptied context takes new entries again
  index.add("ctx", unit([1, 0]), "again", 1_000);
  assert.equal(index.find("ctx", unit([1, 0]), 0.9)?.key, "again");
});

Deno.test("semantic index: maxEntries evicts the oldest", () => {
  const index = new SemanticIndex(3, clock().now);
  index.add("ctx", unit([1, 0, 0, 0]), "a", 60_000);
  index.add("other", unit([0, 1, 0, 0]), "b", 60_000);
  index.add("ctx", unit([0, 0, 1, 0]), "c", 60_000);
  index.add("ctx", unit([0, 0, 0, 1]), "d", 60_000);
  assert.equal(index.size, 3);
  assert.equal(index.find("ctx", unit([1, 0, 0, 0]), 0.9), undefined, "a, the oldest, went");
  assert.equal(index.find("other", unit([0, 1, 0, 0]), 0.9)?.key, "b");
  assert.equal(index.find("ctx", unit([0, 0, 1, 0]), 0.9)?.key, "c");
  assert.equal(index.find("ctx", unit([0, 0, 0, 1]), 0.9)?.key, "d");
  index.add("ctx", unit([1, 1, 0, 0]), "e", 60_000);
  assert.equal(index.find("other", unit([0, 1, 0, 0]), 0.9), undefined, "then b");
  assert.equal(index.maxEntries, 3);
});

Deno.test("semantic index: adding an existing key replaces it, and makes it the newest", () => {
  const c = clock();
  const index = new SemanticIndex(2, c.now);
  index.add("ctx", unit([1, 0]), "k", 1_000);
  index.add("ctx", unit([0, 1]), "other", 60_000);
  index.add("ctx2", unit([0, 1]), "k", 60_000);
  assert.equal(index.size, 2, "replaced, not added");
  assert.equal(index.find("ctx", unit([1, 0]), 0.9), undefined, "the old vector and context are gone");
  assert.equal(index.find("ctx2", unit([0, 1]), 0.9)?.key, "k");
  c.advance(2_000);
  assert.equal(index.find("ctx2", unit([0, 1]), 0.9)?.key, "k", "with the new ttl");
  // k is the newest now: the next add evicts "other"
  index.add("ctx3", unit([1, 1]), "third", 60_000);
  assert.equal(index.find("ctx", unit([0, 1]), 0.9), undefined);
  assert.equal(index.find("ctx2", unit([0, 1]), 0.9)?.key, "k");
});

Deno.test("semantic index: forget removes a key, and forgetting an unknown one does nothing", () => {
  const index = new SemanticIndex(10, clock().now);
  index.add("ctx", unit([1, 0]), "a", 60_000);
  index.add("ctx", unit([0.9, 0.1]), "b", 60_000);
  index.forget("a");
  assert.equal(index.size, 1);
  assert.equal(index.find("ctx", unit([1, 0]), 0.9)?.key, "b");
  index.forget("a");
  index.forget("never");
  assert.equal(index.size, 1);
  index.forget("b");
  assert.equal(index.size, 0);
  assert.equal(index.find("ctx", unit([1, 0]), 0), undefined);
});

// Float32 rounding puts a unit vector's dot with itself at 0.99999994 as often as at 1: threshold 1 must hold.
Deno.test({
  name: "semantic index: an identical vector matches at threshold 1",
  fn() {
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5;
    for (let i = 0; i < 50; i++) {
      const u = unit(Array.from({ length: 64 }, random));
      const index = new SemanticIndex(1, clock().now);
      index.add("ctx", u, "k", 60_000);
      assert.equal(index.find("ctx", u, 1)?.key, "k", `vector ${i}`);
    }
  },
});
