/**
 * What the depth check costs, counted rather than timed (tests/helpers/work_meter.ts): work in proportion to
 * the body's length at most, for a body nested 100k levels deep as for one of many brackets and no depth. A
 * recursive or rescanning check would do quadratic work on them (or overflow the stack), which is what made
 * such a body stall the event loop. Counting the blocks of the check's code that ran and the characters its
 * searches went over does not change with how loaded the machine is, as a clock does.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startWorkMeter } from "../../tests/helpers/work_meter.ts";

// Before the check is first called: block coverage counts only code compiled after it started.
const meter = await startWorkMeter();
const { jsonDepthExceeds } = await import("./json_depth.ts");
const MODULE = [new URL("./json_depth.ts", import.meta.url)];

/** Linear work on four times the body is four times the work, give or take its ends. */
const MOST_GROWTH = 4.5;

const BODIES: readonly [string, (n: number) => string, number, boolean][] = [
  ["nested arrays", (n) => "[".repeat(n) + "]".repeat(n), 64, true],
  ["nested objects", (n) => '{"a":'.repeat(n) + "1" + "}".repeat(n), 64, true],
  [
    "many brackets, none deep",
    (n) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ i, s: "[{" }))),
    2,
    false,
  ],
];

Deno.test("json depth: a body nested 100k levels deep, or of many brackets, costs work in proportion to its length, never its square", async () => {
  for (const [name, body, max, deep] of BODIES) {
    const small = body(deep ? 25_000 : 2_000), large = body(deep ? 100_000 : 8_000);
    const answers: boolean[] = [];
    const once = await meter.measure(MODULE, () => answers.push(jsonDepthExceeds(small, max)));
    const four = await meter.measure(MODULE, () => answers.push(jsonDepthExceeds(large, max)));
    assert.deepEqual(answers, [deep, deep], name);
    assert.ok(
      four.total <= MOST_GROWTH * once.total,
      `${name}: four times the body took ${(four.total / once.total).toFixed(1)} times the work ` +
        `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
    );
  }
});
