import assert from "node:assert/strict";
import { encodedForms } from "./forms.ts";
import { createScrubber, MASK, MIN_LENGTH, type Scrubber, scrubberOf } from "./scrubber.ts";

/**
 * A scrubber for `secrets` and, as the oracle, its `test` as it was before wholes.ts: the run scan, then one
 * `includes` per string looked for whole. The faster `test` must agree with it on every text.
 */
function withOracle(secrets: string[], minLength?: number): [Scrubber, (text: string) => boolean] {
  let oracle: ((text: string) => boolean) | undefined;
  const scrubber = createScrubber(secrets, {
    minLength,
    parts: (scan, exact) => {
      oracle = (text) => scan(text) || exact.some((string) => text.includes(string));
    },
  });
  // No secret long enough: the scrubber knows none, and `test` is false for every text, as before.
  return [scrubber, oracle ?? (() => false)];
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The base64 (or base64url, unpadded as JWTs have it) of `text`'s UTF-8 bytes after `before` raw bytes. */
function encode(text: string, before: number[], url: boolean): string {
  const bytes = [...before, ...new TextEncoder().encode(text)];
  const standard = btoa(String.fromCharCode(...bytes));
  return url ? standard.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "") : standard;
}

/** Secrets of several lengths (whole-only, runs, plain words), alphabets and UTF-8 widths. */
const SECRETS = [
  "hunter22x", // 9: masked whole only
  "Zq8LmN3vR7", // 10
  "pw>>>???~~~Xq7vB2mN", // base64 with `+` and `/`
  "sk-proj-Xq7vB2mNp4Lk9TzR8wYc3FhJ6dGs1AeU",
  "AKIAIOSFODNN7EXAMPLE",
  "fake-upstream-key", // plain words
  'pa"ss\\word-0123456789', // JSON-escaped in a log line
  "clé-secrète-Ωμέγα-42", // multi-byte UTF-8
  "gw-team-a-4e8b1c7f2a9d3e6b0f5c8a1d",
];

Deno.test("wholes: every encoded form of a secret, after any prefix and inside longer base64, is found", () => {
  const s = createScrubber(SECRETS);
  for (const secret of SECRETS) {
    const forms = encodedForms(secret).filter((form) => form.length >= MIN_LENGTH);
    assert.ok(forms.length > 0, secret);
    for (const prefix of ["", "Bearer ", "user:", ":", "a", "ab", "gateway:x"]) {
      for (const suffix of ["", "z", ":tail"]) {
        // Raw bytes before the text: the secret at each alignment inside a longer encoded text.
        for (const before of [[], [0xfb], [0xff, 0x00], [1, 2, 3, 4, 5]]) {
          for (const url of [false, true]) {
            const encoded = encode(`${prefix}${secret}${suffix}`, before, url);
            const present = forms.filter((form) => encoded.includes(form));
            assert.ok(present.length > 0, `${secret} ${encoded}`);
            for (const text of [encoded, `${encoded} tail`, `header: ${encoded}`, `{"auth":"${encoded}"}`]) {
              assert.equal(s.test(text), true, text);
              const scrubbed = s.scrub(text);
              assert.ok(scrubbed.includes(MASK), scrubbed);
              for (const form of present) assert.ok(!scrubbed.includes(form), `${form} in ${scrubbed}`);
            }
          }
        }
      }
    }
  }
});

Deno.test("wholes: a form is found at every offset against the scan's stride, up to the end of the text", () => {
  const s = createScrubber(SECRETS);
  for (const secret of SECRETS) {
    for (const form of encodedForms(secret).filter((form) => form.length >= MIN_LENGTH)) {
      for (let pad = 0; pad < 12; pad++) {
        for (const tail of ["", "~", "~~~~~~~"]) {
          const text = `${"~".repeat(pad)}${form}${tail}`;
          assert.equal(s.test(text), true, text);
          assert.ok(!s.scrub(text).includes(form), text);
        }
      }
    }
  }
});

Deno.test("wholes: strings too short for the scan (a provider's own 4-character key) are still found", () => {
  const s = scrubberOf(["abcd", "Xy7z9"]);
  for (const text of ["abcd", "xabcdx", "Xy7z9", "id Xy7z9"]) assert.equal(s.test(text), true, text);
  assert.equal(s.test("abc xy7z9"), false);
  // Of a 6-character key, the forms of 8 characters or more are found; shorter ones never were.
  const six = scrubberOf(["Q7rT2k"]);
  for (const form of encodedForms("Q7rT2k").filter((form) => form.length >= MIN_LENGTH)) {
    assert.equal(six.test(`x ${form} x`), true, form);
  }
});

Deno.test("wholes: `test` agrees with the run scan plus `includes` of every whole string on random texts", () => {
  const next = random(0x5c12b);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)];
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_:. "\\é';
  const noise = (length: number) => Array.from({ length }, () => pick([...ALPHABET])).join("");
  /** A random secret: a key of random characters, a plain-word one, or a short one. */
  const secret = (): string => {
    const kind = next();
    if (kind < 0.15) return pick(["fake-upstream-key", "sk-no-key-required", "correct-horse-battery"]);
    if (kind < 0.3) return noise(4 + Math.floor(next() * 8));
    return noise(12 + Math.floor(next() * 34));
  };
  let trials = 0;
  let found = 0;
  for (let config = 0; config < 60; config++) {
    const secrets = Array.from({ length: 1 + Math.floor(next() * 12) }, secret);
    const [s, oracle] = withOracle(secrets, next() < 0.5 ? 4 : undefined);
    const sources = secrets.flatMap((value) => [
      value,
      JSON.stringify(value).slice(1, -1),
      ...encodedForms(value),
      encode(`Bearer ${value}`, [], false),
      encode(`user:${value}`, [7], true),
    ]);
    for (let i = 0; i < 100; i++) {
      // Noise around pieces of secrets and forms: whole ones, cut ones (a character short on either side), one
      // with a character changed, in another case: hits, near misses and plain misses.
      let text = noise(Math.floor(next() * 6));
      for (let piece = Math.floor(next() * 4); piece > 0; piece--) {
        const source = pick(sources);
        const from = next() < 0.5 ? 0 : Math.floor(next() * 3);
        const to = source.length - (next() < 0.5 ? 0 : Math.floor(next() * 3));
        let part = source.slice(from, to);
        const change = next();
        if (change < 0.15) part = part.toLowerCase();
        else if (change < 0.3 && part.length > 0) {
          const at = Math.floor(next() * part.length);
          part = `${part.slice(0, at)}${pick([...ALPHABET])}${part.slice(at + 1)}`;
        }
        text += part + noise(Math.floor(next() * 5));
      }
      const expected = oracle(text);
      assert.equal(
        s.test(text),
        expected,
        `secrets ${JSON.stringify(secrets)}, text ${JSON.stringify(text)}`,
      );
      // `test` is whether `scrub` would change the text, as its doc says.
      assert.equal(s.scrub(text) !== text, expected, JSON.stringify(text));
      trials++;
      if (expected) found++;
    }
  }
  // Both answers were exercised, many times each.
  assert.equal(trials, 6_000);
  assert.ok(found > 1_000 && trials - found > 1_000, `${found} of ${trials}`);
});
