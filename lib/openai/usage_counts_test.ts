/** The one rule for an upstream's token counts, and reading a usage by it. */
import assert from "node:assert/strict";
import { isTokenCount, readCounts } from "./usage_counts.ts";

/** Values some upstream has sent (or could) where a count belongs, none of them a count. */
const NOT_COUNTS: readonly unknown[] = [
  -1,
  -5000,
  2.5,
  1e19,
  1e20,
  1e308,
  Infinity,
  NaN,
  "100",
  true,
  {},
  [],
];

Deno.test("token count: a non-negative safe integer, nothing else", () => {
  for (const n of [0, 1, 472, Number.MAX_SAFE_INTEGER]) assert.equal(isTokenCount(n), true, String(n));
  for (const v of [...NOT_COUNTS, null, undefined]) assert.equal(isTokenCount(v), false, String(v));
});

Deno.test("read counts: required and optional counts; any that is not a count makes the usage untrusted", () => {
  const read = (u: Record<string, unknown>) =>
    readCounts((count) => ({
      input: count(u.input),
      cached: count(u.cached, 0),
      split: count(u.split, undefined),
    }));
  assert.deepEqual(read({ input: 5, cached: 2, split: 1 }), { input: 5, cached: 2, split: 1 });
  assert.deepEqual(
    read({ input: 5, cached: null }),
    { input: 5, cached: 0, split: undefined },
    "null is absent",
  );
  assert.equal(read({}), undefined, "a required count missing");
  for (const bad of NOT_COUNTS) {
    assert.equal(read({ input: bad }), undefined, `input ${String(bad)}`);
    assert.equal(read({ input: 5, cached: bad }), undefined, `cached ${String(bad)}`);
    assert.equal(read({ input: 5, split: bad }), undefined, `split ${String(bad)}`);
  }
});
