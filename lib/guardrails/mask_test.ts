import assert from "node:assert/strict";
import { createMasker, createUnmasker } from "./mask.ts";
import type { Finding } from "./types.ts";

/** A stand-in recognizer for the tests: every `word@word.word` is an EMAIL, every `+` and 10 digits a PHONE. */
function find(text: string): Finding[] {
  const findings: Finding[] = [];
  for (const m of text.matchAll(/[a-z.]+@[a-z]+\.[a-z]+|\+\d{10}/g)) {
    findings.push({
      type: m[0].startsWith("+") ? "PHONE" : "EMAIL",
      start: m.index,
      end: m.index + m[0].length,
    });
  }
  return findings;
}

Deno.test("mask: typed placeholders, counted per type, one per value across the request's texts", () => {
  const masker = createMasker();
  const first = "write to bob@example.com or ann@example.org, call +4912345678";
  const second = "again: ann@example.org, then bob@example.com";
  assert.equal(masker.mask(first, find(first)), "write to <EMAIL_1> or <EMAIL_2>, call <PHONE_1>");
  assert.equal(masker.mask(second, find(second)), "again: <EMAIL_2>, then <EMAIL_1>");
  assert.deepEqual(
    [...masker.mapping()],
    [["<EMAIL_1>", "bob@example.com"], ["<EMAIL_2>", "ann@example.org"], ["<PHONE_1>", "+4912345678"]],
  );
});

Deno.test("mask: the masked texts never hold an original value, and reverse to the texts", () => {
  const texts = [
    "bob@example.com",
    "bob@example.com bob@example.com",
    "é😀bob@example.com😀ann@example.org+4912345678",
    "<EMAIL_1> is not bob@example.com",
  ];
  // Given up front, the last text's literal <EMAIL_1> is never issued: reversal cannot confuse them.
  const masker = createMasker(texts);
  const masked = texts.map((t) => masker.mask(t, find(t)));
  for (const value of masker.mapping().values()) {
    for (const text of masked) assert.ok(!text.includes(value), `${value} in ${text}`);
  }
  // Reversal gives every text back.
  const unmasker = createUnmasker(masker.mapping());
  assert.deepEqual(masked.map(unmasker.unmaskText), texts);
});

Deno.test("mask: overlapping, empty and out-of-range findings are skipped, in any order", () => {
  const masker = createMasker();
  const text = "abcdefghij";
  const findings: Finding[] = [
    { type: "B", start: 6, end: 8 },
    { type: "A", start: 1, end: 4 },
    { type: "X", start: 2, end: 5 }, // overlaps A
    { type: "X", start: 5, end: 5 }, // empty
    { type: "X", start: 8, end: 11 }, // past the end
    { type: "X", start: -1, end: 1 },
  ];
  assert.equal(masker.mask(text, findings), "a<A_1>ef<B_1>ij");
});

Deno.test("mask: findings that touch are both masked", () => {
  const masker = createMasker();
  const text = "bob@example.com+4912345678 done";
  assert.equal(masker.mask(text, find(text)), "<EMAIL_1><PHONE_1> done");
});

Deno.test("mask: a type is made placeholder-safe", () => {
  const masker = createMasker();
  assert.equal(masker.mask("x", [{ type: "credit card<>", start: 0, end: 1 }]), "<CREDIT_CARD___1>");
  assert.equal(masker.mask("y", [{ type: "", start: 0, end: 1 }]), "<PII_1>");
});

Deno.test("mask: placeholders the client wrote are never issued, and never reversed", () => {
  // Reserved up front: the second text's literal is known before the first is masked.
  const texts = ["mail bob@example.com", "what does <EMAIL_1> mean? and <EMAIL_3>"];
  const masker = createMasker(texts);
  assert.equal(masker.mask(texts[0], find(texts[0])), "mail <EMAIL_2>");
  assert.equal(masker.mask(texts[1], find(texts[1])), texts[1]);
  const own = "ann@example.org or <EMAIL_2>";
  // Reserved by the text itself: <EMAIL_3> was reserved up front, <EMAIL_2> is issued already.
  assert.equal(masker.mask(own, find(own)), "<EMAIL_4> or <EMAIL_2>");
  const unmasker = createUnmasker(masker.mapping());
  assert.equal(
    unmasker.unmaskText("<EMAIL_1>, <EMAIL_2>, <EMAIL_3>, <EMAIL_4>"),
    "<EMAIL_1>, bob@example.com, <EMAIL_3>, ann@example.org",
  );

  // Not passed up front: a literal in the same text still reserves its placeholder.
  const late = createMasker();
  const text = "<EMAIL_1> and bob@example.com";
  assert.equal(late.mask(text, find(text)), "<EMAIL_1> and <EMAIL_2>");
});

Deno.test("unmask: only keys shaped like placeholders are accepted", () => {
  assert.throws(() => createUnmasker(new Map([["EMAIL_1", "x"]])), TypeError);
  assert.throws(() => createUnmasker(new Map([["<A<B>", "x"]])), TypeError);
  assert.throws(() => createUnmasker(new Map([["<>", "x"]])), TypeError);
});

Deno.test("unmask: no mapping passes text through, a stream holds nothing", () => {
  const unmasker = createUnmasker(new Map());
  assert.equal(unmasker.unmaskText("<EMAIL_1> <"), "<EMAIL_1> <");
  assert.equal(unmasker.push("a <"), "a <");
  assert.equal(unmasker.end(), "");
});

const MAPPING = new Map([
  ["<EMAIL_1>", "bob@example.com"],
  ["<EMAIL_2>", "ann@例え.jp"],
  ["<EMAIL_12>", "twelve@example.com"],
  ["<CREDIT_CARD_1>", "4111 1111 1111 1111"],
]);
const LONGEST = Math.max(...[...MAPPING.keys()].map((k) => k.length));

const ANSWERS = [
  "<EMAIL_1>",
  "<EMAIL_1><EMAIL_2><EMAIL_1>",
  "Hi <EMAIL_1>, your card <CREDIT_CARD_1> is on file; cc <EMAIL_12>.",
  "<EMAIL_12><EMAIL_1>< EMAIL_1> <EMAIL_3> <EMAIL_1 > <email_1> <EMAIL_1",
  "a < b << c <<EMAIL_1>> <<<EMAIL_2><",
  "😀<EMAIL_1>😀 é<EMAIL_2>日本 <CREDIT_CARD_1>👍🏽",
  "1 < 2 and 3 > 2, x<y>z, <> <<>> <EMAIL_>, <EMAIL_1>",
  "ends with a partial <EMA",
  "ends with <",
  "<EMAIL_1><",
  "<<<<<<<<<<<<<<<<<<<<<<<<<<EMAIL_1>",
  "no placeholders at all",
  "",
];

/** Feeds `chunks` through a fresh unmasker and checks what it emits as it goes. */
function stream(chunks: readonly string[]): string[] {
  const unmasker = createUnmasker(MAPPING);
  const whole = unmasker.unmaskText(chunks.join(""));
  const outputs: string[] = [];
  let fed = "";
  for (const chunk of chunks) {
    outputs.push(unmasker.push(chunk));
    fed += chunk;
    const shown = outputs.join("");
    // Never anything that is not final, and behind what came in by less than the longest placeholder.
    assert.ok(
      whole.startsWith(shown),
      `${JSON.stringify(shown)} is not a prefix of ${JSON.stringify(whole)}`,
    );
    assert.ok(unmasker.unmaskText(fed).length - shown.length < LONGEST, "held more than a placeholder");
  }
  outputs.push(unmasker.end());
  return outputs;
}

/** Each restored value is emitted inside one output, and no placeholder survives, whole or cut. */
function assertAtomic(answer: string, outputs: readonly string[]) {
  const joined = outputs.join("");
  assert.equal(joined, createUnmasker(MAPPING).unmaskText(answer));
  // Where each restored value ends up in the joined output, from the answer's own placeholders.
  const spans: [number, number][] = [];
  let shift = 0;
  for (const m of answer.matchAll(/<[^<>]+>/g)) {
    const value = MAPPING.get(m[0]);
    if (value === undefined) continue;
    spans.push([m.index + shift, m.index + shift + value.length]);
    shift += value.length - m[0].length;
  }
  let at = 0;
  const cuts = new Set<number>();
  for (const output of outputs) cuts.add(at += output.length);
  for (const [start, end] of spans) {
    for (let cut = start + 1; cut < end; cut++) assert.ok(!cuts.has(cut), `a value is cut at ${cut}`);
  }
}

Deno.test("unmask: a stream cut at every offset gives the whole answer unmasked, no placeholder cut", () => {
  for (const answer of ANSWERS) {
    for (let i = 0; i <= answer.length; i++) {
      assertAtomic(answer, stream([answer.slice(0, i), answer.slice(i)]));
    }
  }
});

Deno.test("unmask: a stream cut at every pair of offsets, and one character at a time", () => {
  for (const answer of ANSWERS) {
    for (let i = 0; i <= answer.length; i++) {
      for (let j = i; j <= answer.length; j++) {
        assertAtomic(answer, stream([answer.slice(0, i), answer.slice(i, j), answer.slice(j)]));
      }
    }
    assertAtomic(answer, stream([...answer].flatMap((c) => ["", c])));
  }
});

Deno.test("unmask: a partial placeholder at the end of a stream is held, then given back as text", () => {
  const unmasker = createUnmasker(MAPPING);
  assert.equal(unmasker.push("see <EMA"), "see ");
  assert.equal(unmasker.push("IL_1"), "");
  assert.equal(unmasker.end(), "<EMAIL_1");
  // A `<` that cannot become a placeholder is shown at once.
  assert.equal(unmasker.push("a <b"), "a <b");
  assert.equal(unmasker.push(" <EMAIL_9"), " <EMAIL_9");
  assert.equal(unmasker.push(" <EMAIL_1"), " ");
  assert.equal(unmasker.push("2>!"), "twelve@example.com!");
  assert.equal(unmasker.end(), "");
});
