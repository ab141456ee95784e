/**
 * What reversing masks costs, counted rather than timed (tests/helpers/work_meter.ts): an answer is unmasked
 * in one pass, however many `<` it holds. A model can be made to answer with a text full of `<` (and any
 * upstream can send one), so an unmasker that looked for the next `>` from every `<` would spend the square
 * of the answer's length on it. The blocks of the unmasker's code that ran and the characters its string
 * searches went over are the same on every run; a clock (the CPU-time bound this replaced) measures the
 * machine as much as the code.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startWorkMeter } from "../../tests/helpers/work_meter.ts";

// Before the unmasker is first called: block coverage counts only code compiled after it started.
const meter = await startWorkMeter();
const { createUnmasker } = await import("./mask.ts");
const MODULE = [new URL("./mask.ts", import.meta.url)];

/** Linear work on four times the text is four times the work, give or take its ends. */
const MOST_GROWTH = 4.5;

const MAPPING = new Map([
  ["<EMAIL_1>", "bob@example.com"],
  ["<EMAIL_12>", "twelve@example.com"],
]);

Deno.test("unmask work: a text full of `<` costs work in proportion to its length, never its square", async () => {
  const shapes: [string, (n: number) => string, (n: number) => string][] = [
    [
      "`<` then a placeholder's rest",
      (n) => "<".repeat(n) + "EMAIL_1>",
      (n) => "<".repeat(n - 1) + "bob@example.com",
    ],
    ["`<` and `>` apart", (n) => "<".repeat(n) + ">".repeat(n), (n) => "<".repeat(n) + ">".repeat(n)],
    ["placeholders back to back", (n) => "<EMAIL_1>".repeat(n), (n) => "bob@example.com".repeat(n)],
  ];
  for (const [name, text, unmasked] of shapes) {
    const [small, large] = [text(50_000), text(200_000)];
    const results: string[] = [];
    const once = await meter.measure(MODULE, () => results.push(createUnmasker(MAPPING).unmaskText(small)));
    const four = await meter.measure(MODULE, () => results.push(createUnmasker(MAPPING).unmaskText(large)));
    assert.deepEqual(results, [unmasked(50_000), unmasked(200_000)], name);
    assert.ok(
      four.total <= MOST_GROWTH * once.total,
      `${name}: four times the text took ${(four.total / once.total).toFixed(1)} times the work ` +
        `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
    );
  }
});

Deno.test("unmask work: a stream of `<` held back chunk by chunk costs work in proportion to its length", async () => {
  const stream = (n: number) => {
    const unmasker = createUnmasker(MAPPING);
    let out = "";
    for (let i = 0; i < n; i++) out += unmasker.push("<<<<");
    return out + unmasker.end();
  };
  const results: string[] = [];
  const once = await meter.measure(MODULE, () => results.push(stream(5_000)));
  const four = await meter.measure(MODULE, () => results.push(stream(20_000)));
  assert.deepEqual(results, ["<".repeat(20_000), "<".repeat(80_000)]);
  assert.ok(
    four.total <= MOST_GROWTH * once.total,
    `four times the stream took ${(four.total / once.total).toFixed(1)} times the work ` +
      `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
  );
});
