import assert from "node:assert/strict";
import { countTokens } from "./estimate.ts";
import { countTexts, FOLD_CHARS, StreamTexts } from "./stream_texts.ts";

/** Deltas as a model streams them: words of every kind, split anywhere (mid-word, mid-number, emoji). */
function deltas(chars: number): string[] {
  const words = [
    "the",
    " quick",
    " brown",
    " fox",
    " 1234567",
    " naïve",
    " café",
    " 🦊",
    "\n\n",
    " jumps",
    ".",
  ];
  const out: string[] = [];
  let total = 0;
  for (let i = 0; total < chars; i++) {
    const text = words[i % words.length] + words[(i * 7) % words.length].slice(0, 1 + (i % 3));
    out.push(text);
    total += text.length;
  }
  return out;
}

Deno.test("stream texts: a short answer is kept as it came, and counted as a plain list is", async () => {
  const texts = new StreamTexts();
  const all = deltas(1000);
  for (const text of all) texts.push(text);
  assert.deepEqual(texts.opening(), all);
  assert.equal(texts.chars, all.join("").length);
  assert.equal(await texts.count(), await countTokens(all));
  assert.equal(await countTexts(texts), await countTexts(all));
});

Deno.test("stream texts: a long answer is folded into its count as it goes, and the count stays exact", async () => {
  const texts = new StreamTexts();
  const all = deltas(FOLD_CHARS * 5 + 123);
  for (const text of all) texts.push(text);
  // Only the first batch is kept (the opening a trace captures), never the whole answer.
  const opening = texts.opening();
  const openingChars = opening.join("").length;
  assert.ok(openingChars > FOLD_CHARS && openingChars < FOLD_CHARS + 100, `${openingChars}`);
  assert.deepEqual(opening, all.slice(0, opening.length), "the opening is the answer's start");
  assert.equal(texts.chars, all.join("").length, "every character is weighed");
  assert.equal(await texts.count(), await countTokens(all), "the same count as the whole list's");
});

Deno.test("stream texts: a reader ahead of the token-count worker is told to wait until it catches up", async () => {
  const texts = new StreamTexts();
  const all = deltas(FOLD_CHARS * 3 + 10);
  assert.equal(texts.caughtUp(), undefined, "nothing folded: nothing to wait for");
  for (const text of all) texts.push(text);
  // Three batches handed to the worker at once: the stream body would wait before it reads the upstream again.
  const behind = texts.caughtUp();
  assert.ok(behind instanceof Promise);
  await behind;
  assert.equal(texts.caughtUp(), undefined, "caught up: the body reads on");
  assert.equal(await texts.count(), await countTokens(all));
});

Deno.test("stream texts: reasoning is counted as any text, and told apart from the answer for capture", async () => {
  const texts = new StreamTexts();
  texts.pushReasoning("The user greets me; ");
  texts.pushReasoning("answer briefly.");
  texts.push("Hi ");
  texts.push("there.");
  assert.deepEqual(texts.said(), {
    text: ["Hi ", "there."],
    reasoning: ["The user greets me; ", "answer briefly."],
  });
  assert.equal(
    texts.reasoningChars,
    "The user greets me; answer briefly.".length,
    "the budget's reasoning too",
  );
  const all = ["The user greets me; ", "answer briefly.", "Hi ", "there."];
  assert.deepEqual(texts.opening(), all);
  assert.equal(await texts.count(), await countTokens(all));

  const plain = new StreamTexts();
  plain.push("Hi");
  assert.deepEqual(plain.said(), { text: ["Hi"], reasoning: [] });
});

Deno.test("stream texts: past the first fold, the opening keeps its reasoning apart; later reasoning does not shift it", async () => {
  const texts = new StreamTexts();
  const thinking = deltas(FOLD_CHARS + 50);
  for (const text of thinking) texts.pushReasoning(text);
  texts.push("Answer.");
  for (const text of deltas(FOLD_CHARS + 50)) texts.pushReasoning(text);
  const said = texts.said();
  assert.deepEqual(said.text, [], "the answer came after the opening");
  assert.deepEqual(said.reasoning, texts.opening());
  assert.deepEqual(said.reasoning, thinking.slice(0, said.reasoning.length));
  assert.equal(
    await texts.count(),
    await countTokens([...thinking, "Answer.", ...deltas(FOLD_CHARS + 50)]),
    "every text counted once",
  );
});

Deno.test("stream texts: empty texts keep nothing, so a stream of empty deltas holds no memory", () => {
  const texts = new StreamTexts();
  for (let i = 0; i < 10_000; i++) {
    texts.push("");
    texts.pushReasoning("");
  }
  texts.push("a");
  texts.pushReasoning("b");
  // Only what was said is kept (an upstream sending empty deltas for ten minutes would otherwise grow the list
  // without ever folding it: empty texts add no characters towards a fold).
  assert.deepEqual(texts.opening(), ["a", "b"]);
  assert.equal(texts.chars, 2);
  assert.equal(texts.reasoningChars, 1);
});
