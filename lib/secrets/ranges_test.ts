import assert from "node:assert/strict";
import { addRange, mergeRanges } from "./ranges.ts";

Deno.test("ranges: N touching or overlapping runs found in order are one range, not N", () => {
  // A text of one key repeated matches a run at every position: what is kept must not grow with the matches.
  const out: number[] = [];
  for (let start = 0; start < 100_000; start++) addRange(out, start, start + 8);
  // The length first: a failing deepEqual of 200,000 numbers would spend gigabytes on its diff.
  assert.equal(out.length, 2);
  assert.deepEqual(out, [0, 100_007]);
  // Runs that touch end to start join too; separate ones stay apart.
  const touching: number[] = [];
  for (let start = 0; start < 80; start += 8) addRange(touching, start, start + 8);
  addRange(touching, 100, 108);
  assert.deepEqual(touching, [0, 80, 100, 108]);
});

Deno.test("ranges: a range that starts before the last is put in its place and merged with its neighbours", () => {
  const out: number[] = [];
  addRange(out, 10, 20);
  addRange(out, 30, 40);
  addRange(out, 50, 60);
  addRange(out, 0, 5);
  assert.deepEqual(out, [0, 5, 10, 20, 30, 40, 50, 60]);
  addRange(out, 18, 31);
  assert.deepEqual(out, [0, 5, 10, 40, 50, 60]);
  addRange(out, 4, 70);
  assert.deepEqual(out, [0, 70]);
});

Deno.test("ranges: two ordered lists merge into one ordered, merged list", () => {
  assert.deepEqual(mergeRanges([0, 8, 20, 28], [4, 12, 30, 40]), [0, 12, 20, 28, 30, 40]);
  assert.deepEqual(mergeRanges([], [1, 2]), [1, 2]);
  assert.deepEqual(mergeRanges([1, 2], []), [1, 2]);
  assert.deepEqual(mergeRanges([0, 100], [10, 20, 30, 40]), [0, 100]);
});
