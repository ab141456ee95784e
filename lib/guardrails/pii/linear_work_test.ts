/**
 * Acceptance 1 of issue 27, its cost half: a recognizer runs on every message of every guarded request and on
 * each hold-back window of a stream, so a text built to make one backtrack or rescan would stall the gateway.
 * Each recognizer, and findPii with every type on, must do work in proportion to the text's length.
 *
 * Counted, not timed (tests/helpers/work_meter.ts): the blocks of the recognizers' code that ran and the
 * characters their regular expressions and string searches went over, on a text and on the same text four
 * times over. Linear work grows 4×, quadratic 16×; a clock grows with whatever else the machine is doing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startWorkMeter, type Work } from "../../../tests/helpers/work_meter.ts";

// Before the recognizers are first called: block coverage counts only code compiled after it started.
const meter = await startWorkMeter();
const { findPii, PII_TYPES, RECOGNIZERS } = await import("./index.ts");
const { NET_CORPORA } = await import("./corpus_net.ts");
const { NUMBER_CORPORA } = await import("./corpus_numbers.ts");
const { SECRET_CORPORA } = await import("./corpus_secrets.ts");

/** Every module of the recognizers: the code whose work is counted. */
const MODULES = [
  "card",
  "email",
  "iban",
  "index",
  "ip",
  "jwt",
  "phone",
  "private_key",
  "scan",
  "secrets",
  "ssn",
].map((name) => new URL(`./${name}.ts`, import.meta.url));

/** Linear work on four times the text is four times the work (exactly so, give or take its ends). */
const MOST_GROWTH = 4.5;

/** The work `find` does on `unit` repeated `times`, and on it repeated four times as often. */
async function growth(find: (text: string) => unknown, unit: string, times: number): Promise<[Work, Work]> {
  const once = await meter.measure(MODULES, () => find(unit.repeat(times)));
  const four = await meter.measure(MODULES, () => find(unit.repeat(4 * times)));
  return [once, four];
}

/** Near-matches of each type: a backtracking or rescanning recognizer does quadratic work on them. */
const HOSTILE: Readonly<Record<string, string>> = {
  EMAIL: "a.".repeat(40) + "a@b.c-" + "x@".repeat(20),
  PHONE: "+1 (415) 555-2671-1 ",
  CREDIT_CARD: "4111 1111 1111 111",
  IBAN: "DE89 3704 0044 0532 013",
  US_SSN: "123-45-678 ",
  IP_ADDRESS: "1.2.3.4.5:ff::ff::",
  OPENAI_API_KEY: "sk-aaaaaaaaaaaaaaaaaaa!",
  ANTHROPIC_API_KEY: "sk-ant-apiapiapiapiapiapi03",
  GOOGLE_API_KEY: "AIzaSyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
  AWS_ACCESS_KEY_ID: "AKIAAAAAAAAAAAAAAAAAAAAA",
  AWS_SECRET_ACCESS_KEY: "aws_secret_access_key Ab1/Ab1/Ab1/Ab1/Ab1/Ab1/Ab1/Ab1/Ab1/Ab1/",
  GITHUB_TOKEN: "ghp_ghp_ghp_ghp_",
  SLACK_TOKEN: "xoxb-xoxb-xoxb-",
  JWT: "eyJeyJ.eyJ.",
  PRIVATE_KEY: "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n",
};

/** Runs that would defeat a naive pattern: one unbroken token, no separators at all. */
const RUNS = ["1", "a", "a.", "1.", "1-", "1 ", "A1", "eyJ", "sk-", "@a", "::"];

/** Characters of the smaller text: far longer than any recognizer's look-around window (at most 255). */
const CHARS = 2 * 1024;

Deno.test("pii: a hostile text costs each recognizer work in proportion to its length, never its square", async () => {
  assert.deepEqual(Object.keys(HOSTILE).sort(), [...PII_TYPES].sort());
  for (const type of PII_TYPES) {
    const recognizer = RECOGNIZERS.get(type)!;
    for (const unit of [HOSTILE[type], ...RUNS]) {
      const [once, four] = await growth(
        (text) => recognizer.find(text),
        unit,
        Math.ceil(CHARS / unit.length),
      );
      assert.ok(
        four.total <= MOST_GROWTH * once.total,
        `${type} on ${JSON.stringify(unit.slice(0, 40))}…: four times the text took ` +
          `${(four.total / once.total).toFixed(1)} times the work (${JSON.stringify(once)} → ${
            JSON.stringify(four)
          })`,
      );
    }
  }
});

Deno.test("pii: findPii with every type on costs work in proportion to the text, findings and overlaps included", async () => {
  const corpora = [NUMBER_CORPORA, NET_CORPORA, SECRET_CORPORA].flatMap((c) => Object.values(c));
  const sample = corpora.flatMap((c) => c.matches.slice(0, 2).map((m) => m.text)).join("\n");
  let found = 0;
  const [once, four] = await growth((text) => found = findPii(text).length, sample, 8);
  assert.ok(found > 4 * 8 * PII_TYPES.length, `${found} findings`);
  assert.ok(
    four.total <= MOST_GROWTH * once.total,
    `four times the text took ${(four.total / once.total).toFixed(1)} times the work ` +
      `(${JSON.stringify(once)} → ${JSON.stringify(four)})`,
  );
});
