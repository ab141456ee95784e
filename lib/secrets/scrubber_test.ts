import assert from "node:assert/strict";
import { createScrubber, MASK, scrubberOf } from "./scrubber.ts";
import { encodedForms } from "./forms.ts";

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

Deno.test("scrubber: from 12 characters a secret's runs are masked too", () => {
  const s = createScrubber(["Xq7vB2mNpQ4z"]);
  assert.equal(s.scrub("key Xq7vB2mN… rejected"), `key ${MASK}… rejected`);
  assert.equal(s.test("key …vB2mNpQ4z"), true);
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

Deno.test("scrubberOf: a provider's own short credentials count from 4 characters, built once per list", () => {
  const list = ["abcd", KEY];
  assert.equal(scrubberOf(list), scrubberOf(list));
  assert.equal(scrubberOf(list).scrub("abcd and sk-proj-Zq8L"), `${MASK} and sk-${MASK}`);
});

// Issue 22: word-like keys people configure for local upstreams (vLLM, Ollama, llama.cpp) must not mask the
// ordinary words inside them wherever they appear.
const WORDY = ["fake-upstream-key", "sk-no-key-required"];
const OWN_WORDS = [
  "The upstream stream ended before its final event.",
  "The upstream stream ended before message_stop.",
  "API key required: the upstream requires a key.",
  "upstream returned 401; key required",
];

Deno.test("scrubber: a config's word-like keys leave the gateway's own words alone", () => {
  const s = createScrubber(WORDY);
  for (const text of OWN_WORDS) {
    assert.equal(s.scrub(text), text);
    assert.equal(s.test(text), false);
  }
});

Deno.test("scrubber: a provider's own word-like key leaves the words of an echoed upstream error alone", () => {
  for (const key of WORDY) {
    const s = scrubberOf([key]);
    for (const text of OWN_WORDS) assert.equal(s.scrub(text), text);
    // Config messages scrub with the same 4-character threshold.
    for (const text of OWN_WORDS) assert.equal(createScrubber([key], { minLength: 4 }).scrub(text), text);
  }
});

Deno.test("scrubber: a word-like key is still masked whole, wherever it is", () => {
  const s = createScrubber(WORDY);
  assert.equal(s.scrub("bad key fake-upstream-key."), `bad key ${MASK}.`);
  assert.equal(s.scrub("x-fake-upstream-key-x"), `x-${MASK}-x`);
  assert.equal(s.scrub("Bearer sk-no-key-required rejected"), `Bearer ${MASK} rejected`);
  assert.equal(s.test("Bearer sk-no-key-required"), true);
  assert.equal(scrubberOf(["fake-upstream-key"]).scrub("[fake-upstream-key]"), `[${MASK}]`);
});

Deno.test("scrubber: a word is not masked on its own at any boundary; two words of a passphrase are", () => {
  const s = createScrubber(["fake-upstream-key"]);
  for (
    const text of [
      "non-upstream path",
      "the upstream-provided key",
      "upstream_error: upstream-side",
      "stream-keeper",
      "fake-news",
      "no-key",
    ]
  ) {
    assert.equal(s.scrub(text), text);
    assert.equal(s.test(text), false);
  }
  // Two of its words joined as in the secret, at the secret's own word boundaries, are a part of it.
  assert.equal(s.scrub("sent fake-upstream as key"), `sent ${MASK} as key`);
  assert.equal(s.scrub("sent upstream-key."), `sent ${MASK}.`);
  assert.equal(s.test("sent upstream-key."), true);
});

Deno.test("scrubber: random-looking runs of a key with words in it are still masked", () => {
  const s = createScrubber(["sk-no-key-required-Xq7vB2mN9pL4"]);
  assert.equal(s.scrub("API key required"), "API key required");
  // "ired-Xq7" is the first run with a digit: the plain words before it stay.
  assert.equal(s.scrub("key required-Xq7v…"), `key requ${MASK}…`);
  assert.equal(s.scrub("…B2mN9pL4"), `…${MASK}`);
});

Deno.test("scrubber: `test` finds a plain-word secret inside a longer word, where `scrub` masks it whole", () => {
  for (const secret of ["fake-upstream-key", "correcthorsebatterystaple"]) {
    const s = createScrubber([secret]);
    assert.equal(s.test(`x${secret}x`), true);
    assert.equal(s.scrub(`x${secret}x`), `x${MASK}x`);
  }
  // One word is one word, however long: only the whole of it is masked.
  const s = createScrubber(["correcthorsebatterystaple"]);
  assert.equal(s.scrub("a horsebattery b"), "a horsebattery b");
  assert.equal(s.test("a horsebattery b"), false);
});

Deno.test("scrubber: a run is found wherever it starts, whatever its place against the scan's stride", () => {
  const s = createScrubber([KEY]);
  // Every run of 8 and 9 characters of the key, at every offset 0..11 in the text: the strided scan looks at
  // every 4th position only, so each alignment of a run against it must be tried.
  for (let from = 0; from + 8 <= KEY.length; from++) {
    for (const length of [8, 9]) {
      const run = KEY.slice(from, from + length);
      if (!/[0-9]|[a-z][A-Z]|[A-Z]{2}/.test(run.slice(0, 8))) continue;
      for (let pad = 0; pad < 12; pad++) {
        const text = `${"~".repeat(pad)}${run}~`;
        assert.equal(s.test(text), true, JSON.stringify(text));
        assert.ok(!s.scrub(text).includes(run.slice(0, 8)), JSON.stringify(text));
      }
    }
  }
  // A run at the very end of the text, its last piece cut short of a full stride.
  for (let pad = 0; pad < 8; pad++) assert.equal(s.test(`${"~".repeat(pad)}${KEY.slice(10, 18)}`), true);
});

Deno.test("scrubber: scrubHead keeps what is before the cut, masked as in the whole text", () => {
  const s = createScrubber([KEY, "hunter22x"]);
  // The margin a cut needs: the longest text masked whole (here the key's base64 form, longer than the key).
  assert.equal(s.longest, Math.max(KEY.length, ...encodedForms(KEY).map((form) => form.length)));
  // A text of the key repeated: one mask, however long the text.
  assert.equal(s.scrubHead(KEY.repeat(1_000), 100), MASK);
  // A secret that straddles the cut is masked whole, even one masked only whole (under 12 characters).
  const before = "x".repeat(95);
  assert.equal(s.scrubHead(`${before}hunter22x tail`, 100), `${before}${MASK}`);
  assert.equal(s.scrubHead(`${before}${KEY} tail`, 100), `${before}${MASK}`);
  // Nothing at or after the cut is kept, even when masks before it shortened the text: a secret cut short at
  // the end of the part handed over (its first characters, no run of it) does not slip in behind them.
  const head = `${"hunter22x".repeat(20)}hunter22`;
  assert.equal(s.scrubHead(head, 180), MASK);
  assert.equal(s.scrubHead("short text", 100), "short text");
  // A secret that starts at the cut is after it: not kept, not even as a mask.
  assert.equal(s.scrubHead(`${"x".repeat(100)}hunter22x`, 100), "x".repeat(100));
});

Deno.test("scrubber: a key quoted lower-cased or upper-cased is masked, whole or in part", () => {
  const s = createScrubber([KEY]);
  for (const form of [KEY.toLowerCase(), KEY.toUpperCase()]) {
    assert.equal(s.test(`bad key ${form}.`), true, form);
    // `sk-proj-` is no random run in any case: it stays, the rest goes.
    assert.equal(s.scrub(`bad key ${form}.`), `bad key ${form.slice(0, 3)}${MASK}.`);
    assert.equal(s.scrub(`…${form.slice(10, 20)}…`), `…${MASK}…`);
  }
  // Which runs count is still decided on the secret as it is: a plain-word run upper-cased is no run.
  const words = createScrubber(["gw-disabled-token-0123456789abcdef"]);
  assert.equal(words.scrub("TOKEN_DISABLED"), "TOKEN_DISABLED");
  // Its random-looking runs (from the first with a digit) are masked in any case; the words before them stay.
  assert.equal(words.scrub("X GW-DISABLED-TOKEN-0123456789ABCDEF X"), `X GW-DISABLED${MASK} X`);
});

Deno.test("scrubber: a word-like key in another case is masked as two or more of its words, never one", () => {
  const s = createScrubber(["fake-upstream-key", "sk-no-key-required"]);
  assert.equal(s.scrub("bad key FAKE-UPSTREAM-KEY."), `bad key ${MASK}.`);
  assert.equal(s.scrub("Bearer SK-No-Key-Required"), `Bearer ${MASK}`);
  assert.equal(s.test("FAKE-UPSTREAM"), true);
  for (const text of ["UPSTREAM", "The Upstream Key Is Required", "API KEY REQUIRED"]) {
    assert.equal(s.scrub(text), text);
    assert.equal(s.test(text), false);
  }
});

Deno.test("scrubber: a run that looks random only by its case is matched in its own case, never as a plain word", () => {
  // `GUARDRAI` (of the key) looks random as written; folded it is the start of an ordinary word.
  const scrubber = createScrubber(["AKIDFAKEGUARDRAIL001"]);
  for (const plain of ["guardrail_unavailable", "the Guardrail said no"]) {
    assert.equal(scrubber.test(plain), false, plain);
    assert.equal(scrubber.scrub(plain), plain);
  }
  assert.equal(scrubber.scrub("key AKIDFAKEGUARDRAIL001"), "key ***");
  assert.equal(scrubber.scrub("part GUARDRAIL"), "part ***", "in its own case, its runs still count");
  // The runs with a digit are matched in any case: a lower-cased quote of the key is still masked.
  const lower = scrubber.scrub("bad key akidfakeguardrail001");
  assert.ok(!lower.includes("rail001"), lower);
});
