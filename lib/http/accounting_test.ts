/**
 * The chat-form token estimate that budgets reserve and TPM charges up front: prompt plus the output limit
 * for each of the `n` choices asked for.
 */
import assert from "node:assert/strict";
import { chatTokenEstimate } from "./accounting.ts";

Deno.test("chatTokenEstimate: the output limit counts once per choice (n), whichever field carries it", () => {
  assert.equal(chatTokenEstimate(10, { max_tokens: 100 }), 110);
  assert.equal(chatTokenEstimate(10, { max_tokens: 100, n: 10 }), 1_010);
  assert.equal(chatTokenEstimate(10, { max_completion_tokens: 50, max_tokens: 100, n: 3 }), 160);
  assert.equal(chatTokenEstimate(10, { max_completion_tokens: 50, n: 1 }), 60);
});

Deno.test("chatTokenEstimate: without an output limit only the prompt counts, whatever n", () => {
  assert.equal(chatTokenEstimate(10, {}), 10);
  assert.equal(chatTokenEstimate(10, { n: 10 }), 10);
  assert.equal(chatTokenEstimate(10, undefined), 10);
  assert.equal(chatTokenEstimate(10, { max_tokens: null, n: 4 }), 10);
});
