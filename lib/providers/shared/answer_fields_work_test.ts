/**
 * What scrubbing an answer's fields costs, counted rather than timed (tests/helpers/work_meter.ts): an upstream
 * is untrusted, and one that answers with an object of half a million keys (a Response's `metadata`, a `usage`),
 * with the key it was sent in every value or every key, must cost the gateway work in proportion to what it
 * sent, a few steps a key and a character, never seconds of its event loop for every other request. A clean
 * answer passed through as sent costs one scan of its text.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startWorkMeter } from "../../../tests/helpers/work_meter.ts";
import type { JsonObject } from "../../openai/types.ts";

// Before the walk is first called: block coverage counts only code compiled after it started.
const meter = await startWorkMeter();
const { createScrubber } = await import("../../secrets/scrubber.ts");
const { fieldScrub, scrubAnswerFields } = await import("./answer_fields.ts");
const MODULES = [
  new URL("./answer_fields.ts", import.meta.url),
  ...["forms", "ranges", "run_table", "scrub_json", "scrubber", "wholes", "words"].map((name) =>
    new URL(`../../secrets/${name}.ts`, import.meta.url)
  ),
];

/** Linear work on four times the answer is four times the work, give or take its ends. */
const MOST_GROWTH = 4.5;

const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** A config's secrets: keys of several shapes, a short password, plain words. */
const scrubber = createScrubber([
  KEY,
  "sk-ant-api03-Zq8LmN3vR7tY1wXa9BcDeFgH2jKlMnOp",
  "AIzaSyD4x9Qw7Er2Ty6Ui1Op3As5Df8Gh0Jk",
  "AKIAIOSFODNN7EXAMPLE",
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  "gw-team-a-4e8b1c7f2a9d3e6b0f5c8a1d",
  "hunter22x",
  "fake-upstream-key",
]);

/** A Response's JSON text whose `metadata` has `n` keys. */
function response(n: number, key: (i: number) => string, value: (i: number) => unknown): string {
  const metadata: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) metadata[key(i)] = value(i);
  return JSON.stringify({
    id: "resp_1",
    object: "response",
    model: "m",
    status: "completed",
    metadata,
    output: [],
  });
}

/** Large settings an upstream may send back: clean, or the key everywhere. */
const ANSWERS: readonly [string, (n: number) => string][] = [
  ["clean short values", (n) => response(n, (i) => `k${i}`, (i) => `v${i}`)],
  ["clean long values", (n) => response(n, (i) => `key_${i}`, (i) => `a value of a setting, number ${i}`)],
  ["the key in every value", (n) => response(n, (i) => `k${i}`, () => `bad ${KEY}`)],
  ["the key in every key", (n) => response(n, (i) => `${KEY}-${i}`, (i) => i)],
  ["a password in every value", (n) => response(n, (i) => `k${i}`, () => "hunter22x hunter22x")],
  ["nested objects", (n) => response(n, (i) => `k${i}`, (i) => ({ a: [`x${i}`, { b: KEY }] }))],
];

Deno.test("answer fields work: a whole answer of many keys costs a few steps a key, however many hold the key", async () => {
  for (const [name, answer] of ANSWERS) {
    for (const withText of [false, true]) {
      const label = `${name}${withText ? ", passed through as its text" : ""}`;
      const small = answer(2_000), large = answer(8_000);
      const once = await meter.measure(
        MODULES,
        () => scrubAnswerFields(JSON.parse(small), scrubber, "response", withText ? small : undefined),
      );
      const parsed = JSON.parse(large);
      const four = await meter.measure(
        MODULES,
        () => scrubAnswerFields(parsed, scrubber, "response", withText ? large : undefined),
      );
      assert.ok(
        four.total <= MOST_GROWTH * once.total,
        `${label}: four times the answer took ${(four.total / once.total).toFixed(1)} times the work ` +
          `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
      );
      assert.ok(
        four.total <= 24 * large.length,
        `${label}: ${(four.total / large.length).toFixed(1)} steps a character of the answer`,
      );
      const out = JSON.stringify(parsed);
      assert.ok(
        !out.includes(KEY.slice(8, 20)) && !out.includes("hunter22x"),
        `${label}: ${out.slice(0, 200)}`,
      );
    }
  }
});

Deno.test("answer fields work: a clean answer passed through as sent costs one scan of its text, its keys not walked", async () => {
  const text = response(8_000, (i) => `key_${i}`, (i) => `a value of a setting, number ${i}`);
  const answer = JSON.parse(text);
  const walk = [new URL("./answer_fields.ts", import.meta.url)];
  const work = await meter.measure(walk, () => scrubAnswerFields(answer, scrubber, "response", text));
  assert.ok(work.blocks < 100, `the walk itself did ${JSON.stringify(work)}`);
  let tests = 0;
  const counted = { ...scrubber, test: (t: string) => (tests++, scrubber.test(t)) };
  scrubAnswerFields(JSON.parse(text), counted, "response", text);
  assert.equal(tests, 1, "one test of the text, none per key");
  assert.deepEqual(answer, JSON.parse(text));
});

Deno.test("answer fields work: a stream's chunks cost the same whatever came before them", async () => {
  const chunks = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      ({
        id: `chatcmpl-${i % 7}`,
        model: "m",
        choices: [{ index: 0, delta: { content: `word ${i}` }, finish_reason: null }],
        usage: {
          prompt_tokens: 10,
          completion_tokens: i,
          details: { [`k${i}`]: `v${i}`, [`kind_${i % 300}`]: "x" },
        },
      }) as JsonObject);
  const small = chunks(500), large = chunks(2_000);
  const once = await meter.measure(MODULES, () => {
    const scrub = fieldScrub(scrubber);
    for (const chunk of small) scrub(chunk);
  });
  const four = await meter.measure(MODULES, () => {
    const scrub = fieldScrub(scrubber);
    for (const chunk of large) scrub(chunk);
  });
  assert.ok(
    four.total <= MOST_GROWTH * once.total,
    `four times the chunks took ${(four.total / once.total).toFixed(1)} times the work ` +
      `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
  );
});
