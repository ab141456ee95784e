import assert from "node:assert/strict";
import fc from "fast-check";
import { jsonDepthExceeds } from "./json_depth.ts";

/** The nesting depth of a parsed value, the slow and obvious way (test values are shallow enough). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== "object") return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...children.map(depthOf));
}

Deno.test("json depth: counts arrays and objects, not brackets inside strings", () => {
  assert.equal(jsonDepthExceeds("{}", 1), false);
  assert.equal(jsonDepthExceeds("{}", 0), true);
  assert.equal(jsonDepthExceeds('{"a":[{}]}', 3), false);
  assert.equal(jsonDepthExceeds('{"a":[{}]}', 2), true);
  assert.equal(jsonDepthExceeds("[[],[],[],[]]", 2), false);
  // Brackets in strings, escaped quotes and escaped backslashes before a closing quote.
  const tricky = JSON.stringify({ s: "[[[[{{{{", t: 'say \\"[[[[\\" "}}}}', u: "\\", v: ['\\\\"[[['] });
  assert.equal(depthOf(JSON.parse(tricky)), 2);
  assert.equal(jsonDepthExceeds(tricky, 2), false);
  assert.equal(jsonDepthExceeds(tricky, 1), true);
});

Deno.test("json depth: a 600 KB body nested 300k levels deep is caught; one of many brackets, none deep, is not", () => {
  // What this costs is counted in json_depth_work_test.ts.
  const deep = "[".repeat(300_000) + "]".repeat(300_000);
  const mixed = '{"a":'.repeat(100_000) + "1" + "}".repeat(100_000);
  assert.deepEqual([jsonDepthExceeds(deep, 64), jsonDepthExceeds(mixed, 64)], [true, true]);
  const wide = JSON.stringify(Array.from({ length: 50_000 }, (_, i) => ({ i, s: "[{" })));
  assert.equal(jsonDepthExceeds(wide, 2), false);
});

Deno.test("json depth: agrees with the parsed depth on generated JSON", () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (value, max) => {
      const text = JSON.stringify(value);
      assert.equal(jsonDepthExceeds(text, max), depthOf(value) > max, text);
    }),
    { seed: 4, numRuns: 2_000 },
  );
});
