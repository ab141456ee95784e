import assert from "node:assert/strict";
import { createScrubber, MASK, scrubberOf } from "./scrubber.ts";

const KEY = "sk-proj-Zq8LmN3vR7tY1wXa9BcDeFgH";

Deno.test("scrubber: masks a whole secret wherever it is", () => {
  const s = createScrubber([KEY]);
  assert.equal(s.scrub(`bad key ${KEY}.`), `bad key ${MASK}.`);
  assert.equal(s.scrub(`${KEY}${KEY}`), MASK);
  assert.equal(s.test(`x${KEY}x`), true);
});

Deno.test("scrubber: masks partial quotes of 8+ characters, as upstreams echo them", () => {
  const s = createScrubber([KEY]);
  // OpenAI's own form: the first 8, stars, the last 4. The public `sk-proj-` prefix and 4 characters alone are
  // not distinctive, so they stay; any random-looking run of 8 goes.
  assert.equal(
    s.scrub("Incorrect API key provided: sk-proj-****************eFgH."),
    "Incorrect API key provided: sk-proj-****************eFgH.",
  );
  // The first 12, and a run from the middle.
  assert.equal(s.scrub(`key ${KEY.slice(0, 12)}… rejected`), `key sk-${MASK}… rejected`);
  assert.equal(s.scrub(`key ${KEY.slice(0, 8)}${KEY.slice(8, 16)}`), `key sk-${MASK}`);
  assert.equal(s.scrub(`…${KEY.slice(10, 20)}…`), `…${MASK}…`);
  // 7 characters are not a run.
  assert.equal(s.scrub(`x${KEY.slice(9, 16)}x`), `x${KEY.slice(9, 16)}x`);
  assert.equal(s.test(`x${KEY.slice(9, 16)}x`), false);
});

Deno.test("scrubber: ordinary text is returned as is, short values are not secrets", () => {
  const s = createScrubber([KEY, "true", "v1", ""]);
  const text = "The model `gpt-4o` does not exist or you do not have access to it. stream=true v1";
  assert.equal(s.scrub(text), text);
  assert.equal(s.size, 1);
  assert.equal(createScrubber([]).scrub(text), text);
});

Deno.test("scrubber: plain-word runs of a secret do not mask the gateway's own words", () => {
  const s = createScrubber(["gw-disabled-token-0123456789abcdef"]);
  assert.equal(s.scrub("token_disabled"), "token_disabled");
  assert.equal(s.scrub("x gw-disabled-token-0123456789abcdef x"), `x ${MASK} x`);
  assert.equal(s.scrub("x 456789abcdef x"), `x ${MASK} x`);
  // A passphrase of plain words has no random-looking run, so every run of it counts.
  const words = createScrubber(["correct-horse-battery-staple"]);
  assert.equal(words.scrub("a horse-battery b"), `a ${MASK} b`);
});

Deno.test("scrubber: secrets of 8 to 11 characters are masked whole only", () => {
  const s = createScrubber(["hunter22x"]);
  assert.equal(s.scrub("pw hunter22x!"), `pw ${MASK}!`);
  assert.equal(s.scrub("pw hunter22"), "pw hunter22");
});

Deno.test("scrubber: several secrets and overlapping matches merge into one mask", () => {
  const other = "AKIAIOSFODNN7EXAMPLE";
  const s = createScrubber([KEY, other, "shortone"]);
  assert.equal(s.scrub(`${other}${KEY} shortone`), `${MASK} ${MASK}`);
  assert.equal(s.scrub(`a ${other.slice(0, 10)} b ${KEY.slice(-9)} c`), `a ${MASK} b ${MASK} c`);
});

Deno.test("scrubber: finds a secret with JSON-escaped characters in a serialized line", () => {
  const secret = 'pa"ss\\word-0123456789';
  const s = createScrubber([secret]);
  assert.equal(s.test(JSON.stringify({ error: `x ${secret} y` })), true);
  assert.equal(s.scrub(`x ${secret} y`), `x ${MASK} y`);
});

Deno.test("scrubber: linear in the text: a megabyte of near-misses is scanned quickly", () => {
  const s = createScrubber([KEY, "a".repeat(40)]);
  const text = "aaaaaaa-".repeat(128 * 1024);
  const started = performance.now();
  assert.equal(s.scrub(text), text);
  assert.ok(performance.now() - started < 1_000);
});

Deno.test("scrubberOf: a provider's own short credentials count from 4 characters, built once per list", () => {
  const list = ["abcd", KEY];
  assert.equal(scrubberOf(list), scrubberOf(list));
  assert.equal(scrubberOf(list).scrub("abcd and sk-proj-Zq8L"), `${MASK} and sk-${MASK}`);
});
