/**
 * What scrubbing costs, counted rather than timed (tests/helpers/work_meter.ts): the blocks of the scrubber's
 * code that ran and the characters its string searches went over. A text is scrubbed in one scan, a few steps a
 * character, however many secrets the config has and however much of the text is secret: an upstream that
 * sends its key back thousands of times, or in every key of a large object, must not cost the gateway seconds
 * of its event loop (it knows the key: it was sent it). Before, `scrub` searched the text once for each secret
 * and each of its forms (a config of 12 secrets: some 70 searches of every text it scrubbed), and at each
 * position of a text dense with a secret cut the run out and folded it into a new string with two regular
 * expressions.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startWorkMeter, type Work } from "../../tests/helpers/work_meter.ts";

// Before the scrubber is first called: block coverage counts only code compiled after it started.
const meter = await startWorkMeter();
const { createScrubber } = await import("./scrubber.ts");
const { encodedForms } = await import("./forms.ts");
const MODULES = ["forms", "ranges", "run_table", "scrubber", "wholes", "words"].map((name) =>
  new URL(`./${name}.ts`, import.meta.url)
);

/** Linear work on four times the text is four times the work, give or take its ends. */
const MOST_GROWTH = 4.5;

const KEY = "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU";
/** Secrets of the shapes a config holds: random keys of several lengths and prefixes, one short, plain words. */
const SECRETS = [
  KEY,
  "sk-ant-api03-Zq8LmN3vR7tY1wXa9BcDeFgH2jKlMnOp",
  "AIzaSyD4x9Qw7Er2Ty6Ui1Op3As5Df8Gh0Jk",
  "AKIAIOSFODNN7EXAMPLE",
  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  "gsk_Vb3Nm8Qw2Er5Ty7Ui9Op1As4Df6Gh0JkLz",
  "gw-admin-7f3c9a2e1b4d8f6a0c5e9b2d",
  "gw-team-a-4e8b1c7f2a9d3e6b0f5c8a1d",
  "xai-Lk4Jh7Gf2Ds9Ap5Oi1Uy8Tr3Ew6Qz0Xc",
  "hunter22x",
  "fake-upstream-key",
  "correct-horse-battery-staple",
];
const scrubber = createScrubber(SECRETS);

/** `unit` repeated to about `chars` characters. */
const text = (unit: string, chars: number) => unit.repeat(Math.ceil(chars / unit.length));

/** The work of `fn` on `unit` repeated to 16k characters and to 64k, and the longer text's length. */
async function growth(fn: (text: string) => unknown, unit: string): Promise<[Work, Work, number]> {
  const once = await meter.measure(MODULES, () => fn(text(unit, 16_384)));
  const long = text(unit, 65_536);
  const four = await meter.measure(MODULES, () => fn(long));
  return [once, four, long.length];
}

Deno.test("scrubber work: a clean text is scrubbed in one scan, however many secrets the config has", async () => {
  const clean = text(
    "The model answered in 412 ms; see https://example.com/docs/v1/errors#rate-limits. ",
    65_536,
  );
  const few = createScrubber(SECRETS.slice(0, 2));
  const once = await meter.measure(MODULES, () => assert.equal(few.scrub(clean), clean));
  const all = await meter.measure(MODULES, () => assert.equal(scrubber.scrub(clean), clean));
  // Two secrets' forms or twelve: the same scan (a few more prefilter hits), not a search of the text for each;
  // a strided scan, a few steps for every four characters.
  assert.ok(
    all.total <= 1.5 * once.total,
    `12 secrets cost ${(all.total / once.total).toFixed(1)} times the work of 2 (${JSON.stringify(once)} → ` +
      `${JSON.stringify(all)})`,
  );
  assert.ok(all.total <= 4 * clean.length, `${(all.total / clean.length).toFixed(1)} steps a character`);
});

/** Texts dense with secrets, as a hostile upstream would send them back: every position a match. */
const DENSE: readonly [string, string][] = [
  ["the key repeated", KEY],
  ["the key and a space", `${KEY} `],
  ["the key lower-cased", `${KEY.toLowerCase()}.`],
  ["a short secret", "hunter22x "],
  ["a passphrase's words", "correct-horse-battery-stapl "],
  ["the key's base64", `${encodedForms(KEY)[0]} `],
  ["near-misses", "aaaaaaa-"],
];

Deno.test("scrubber work: a text dense with secrets costs a few steps a character, in proportion to its length", async () => {
  for (const [name, unit] of DENSE) {
    const [once, four, length] = await growth((text) => scrubber.scrub(text), unit);
    assert.ok(
      four.total <= MOST_GROWTH * once.total,
      `${name}: four times the text took ${(four.total / once.total).toFixed(1)} times the work ` +
        `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
    );
    assert.ok(four.total <= 36 * length, `${name}: ${(four.total / length).toFixed(1)} steps a character`);
    const [, tested] = await growth((text) => scrubber.test(text), unit);
    assert.ok(
      tested.total <= 2 * length,
      `${name}: test took ${(tested.total / length).toFixed(1)} a character`,
    );
  }
  // What was dense is masked: nothing of the key is left.
  assert.equal(scrubber.scrub(text(KEY, 4_096)), "***");
  assert.ok(!scrubber.scrub(text(`${KEY.toLowerCase()}.`, 4_096)).includes(KEY.slice(10, 18).toLowerCase()));
});

Deno.test("scrubber work: near-misses of a key, and a word-like key's words over and over, cost work in proportion to the text", async () => {
  const cases: [string, ReturnType<typeof createScrubber>, string, boolean][] = [
    // A run of `a`s one short of a secret's, and the words of plain-word secrets where a part of them is one
    // word short, or stands inside a longer word: every position a candidate, none a mask.
    ["near-misses", createScrubber([KEY, "a".repeat(40)]), "aaaaaaa-", false],
    [
      "a word-like key's words",
      createScrubber(["fake-upstream-key", "correct-horse-battery-staple"]),
      "xfake-upstream-keyx horse-battery-stapl ",
      true,
    ],
  ];
  for (const [name, s, unit, masked] of cases) {
    const [once, four, length] = await growth((text) => [s.scrub(text), s.test(text)], unit);
    assert.ok(
      four.total <= MOST_GROWTH * once.total,
      `${name}: four times the text took ${(four.total / once.total).toFixed(1)} times the work ` +
        `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
    );
    assert.ok(four.total <= 36 * length, `${name}: ${(four.total / length).toFixed(1)} steps a character`);
    assert.equal(s.scrub(unit) !== unit, masked, name);
  }
});
