/**
 * Acceptance 1 of issue 27: each built-in recognizer finds its true matches (recall ≥ 95%, exact span) and
 * stays silent on look-alikes (false positives ≤ 2%), measured on the corpus and printed as a table; findPii
 * resolves overlaps. That each works in linear time is counted in linear_work_test.ts.
 */

import assert from "node:assert/strict";
import type { Corpus } from "./corpus_gen.ts";
import { NET_CORPORA } from "./corpus_net.ts";
import { NUMBER_CORPORA } from "./corpus_numbers.ts";
import { SECRET_CORPORA } from "./corpus_secrets.ts";
import { findPii, PII_TYPES, RECOGNIZERS } from "./index.ts";

const CORPORA: Readonly<Record<string, Corpus>> = { ...NUMBER_CORPORA, ...NET_CORPORA, ...SECRET_CORPORA };

interface Score {
  type: string;
  matches: number;
  recall: number;
  /** Recall through findPii with every type on: the value survives overlap resolution. */
  recallAll: number;
  lookalikes: number;
  fpRate: number;
  missed: string[];
  falsePositives: string[];
}

function score(type: string, corpus: Corpus): Score {
  const recognizer = RECOGNIZERS.get(type)!;
  const missed: string[] = [];
  let found = 0, foundAll = 0;
  for (const { text, value } of corpus.matches) {
    const start = text.indexOf(value), end = start + value.length;
    const exact = (f: { type: string; start: number; end: number }) =>
      f.type === type && f.start === start && f.end === end;
    if (recognizer.find(text).some(exact)) found++;
    else missed.push(text);
    if (findPii(text).some(exact)) foundAll++;
  }
  const falsePositives = corpus.lookalikes.filter((text) => recognizer.find(text).length > 0);
  return {
    type,
    matches: corpus.matches.length,
    recall: found / corpus.matches.length,
    recallAll: foundAll / corpus.matches.length,
    lookalikes: corpus.lookalikes.length,
    fpRate: falsePositives.length / corpus.lookalikes.length,
    missed,
    falsePositives,
  };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`.padStart(7);

Deno.test("pii corpus: every type has a corpus of 40+ matches and 60+ look-alikes", () => {
  assert.deepEqual(Object.keys(CORPORA).sort(), [...PII_TYPES].sort());
  for (const [type, c] of Object.entries(CORPORA)) {
    assert.ok(c.matches.length >= 40, `${type}: ${c.matches.length} matches`);
    assert.ok(c.lookalikes.length >= 60, `${type}: ${c.lookalikes.length} look-alikes`);
    for (const m of c.matches) assert.ok(m.text.includes(m.value), `${type}: ${m.value} not in its text`);
  }
});

Deno.test("pii corpus: recall ≥ 95% and false positives ≤ 2% per recognizer", () => {
  const scores = PII_TYPES.map((t) => score(t, CORPORA[t]));
  const rows = scores.map((s) =>
    `${s.type.padEnd(22)} ${String(s.matches).padStart(7)} ${pct(s.recall)} ${pct(s.recallAll)} ${
      String(s.lookalikes).padStart(10)
    } ${pct(s.fpRate)}`
  );
  console.log(
    [
      `${"type".padEnd(22)} ${"matches".padStart(7)} ${"recall".padStart(7)} ${"(all)".padStart(7)} ${
        "lookalikes".padStart(10)
      } ${"FP".padStart(7)}`,
      ...rows,
    ].join("\n"),
  );
  for (const s of scores) {
    assert.ok(s.recall >= 0.95, `${s.type}: recall ${pct(s.recall)}; missed:\n${s.missed.join("\n")}`);
    assert.ok(s.recallAll >= 0.95, `${s.type}: recall through findPii ${pct(s.recallAll)}`);
    assert.ok(s.fpRate <= 0.02, `${s.type}: FP ${pct(s.fpRate)}:\n${s.falsePositives.join("\n")}`);
  }
});

const spans = (text: string, types?: readonly string[]) =>
  findPii(text, types).map((f) => `${f.type}:${text.slice(f.start, f.end)}`);

Deno.test("findPii: a card number is one card, not also a phone", () => {
  assert.deepEqual(spans("pay with 4111 1111 1111 1111 now"), ["CREDIT_CARD:4111 1111 1111 1111"]);
  assert.deepEqual(spans("amex 3782 822463 10005"), ["CREDIT_CARD:3782 822463 10005"]);
});

Deno.test("findPii: an IP is not a phone, an SSN is not a phone", () => {
  assert.deepEqual(spans("host 192.168.100.200 and 123-45-6789"), [
    "IP_ADDRESS:192.168.100.200",
    "US_SSN:123-45-6789",
  ]);
});

Deno.test("findPii: a JWT holding an e-mail address is one JWT", () => {
  const enc = (o: unknown) =>
    btoa(JSON.stringify(o)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  const token = `${enc({ alg: "HS256" })}.${
    enc({ email: "jo@example.com" })
  }.c2lnbmF0dXJlLW9mLXRoZS10ZXN0LXRva2Vu`;
  const text = `Authorization: Bearer ${token}`;
  assert.deepEqual(spans(text), [`JWT:${token}`]);
});

Deno.test("findPii: a PEM key is one finding, whatever base64 lines inside look like", () => {
  const line = "Ab1/".repeat(10);
  const key = `-----BEGIN PRIVATE KEY-----\n${"Q".repeat(64)}\n${line}\n-----END PRIVATE KEY-----`;
  assert.deepEqual(spans(`key:\n${key}\nbye`), [`PRIVATE_KEY:${key}`]);
});

Deno.test("findPii: sorted by start, disjoint, filtered by type; an unknown type throws", () => {
  const text = "mail jo@example.com, call +44 20 7946 0958, host 10.0.0.1, card 4111111111111111";
  assert.deepEqual(spans(text), [
    "EMAIL:jo@example.com",
    "PHONE:+44 20 7946 0958",
    "IP_ADDRESS:10.0.0.1",
    "CREDIT_CARD:4111111111111111",
  ]);
  assert.deepEqual(spans(text, ["PHONE", "EMAIL"]), ["EMAIL:jo@example.com", "PHONE:+44 20 7946 0958"]);
  assert.deepEqual(findPii(text, []), []);
  assert.throws(() => findPii(text, ["NOPE"]), RangeError);
});

Deno.test("findPii: equal spans go to the more specific type; longer beats shorter", async () => {
  const { resolveOverlaps } = await import("./index.ts");
  const f = (type: string, start: number, end: number) => ({ type, start, end });
  assert.deepEqual(resolveOverlaps([f("PHONE", 0, 10), f("US_SSN", 0, 10)]), [f("US_SSN", 0, 10)]);
  assert.deepEqual(resolveOverlaps([f("EMAIL", 5, 15), f("JWT", 0, 40), f("PHONE", 41, 50)]), [
    f("JWT", 0, 40),
    f("PHONE", 41, 50),
  ]);
  assert.deepEqual(resolveOverlaps([f("PHONE", 0, 10), f("IP_ADDRESS", 8, 20)]), [f("IP_ADDRESS", 8, 20)]);
});
