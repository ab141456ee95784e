import assert from "node:assert/strict";
import { StreamTexts } from "../usage/stream_texts.ts";
import { GatewayError } from "../errors.ts";
import {
  BUDGET_STOP_CODE,
  BudgetStop,
  createBudgetGuard,
  streamBudgetGuard,
  streamErrorCode,
} from "./budget_guard.ts";
import { costOfUsage, type TokenPrices } from "../pricing/cost.ts";
import type { ClientContext } from "../http/context.ts";
import type { ChatRequest } from "../openai/types.ts";
import { promptTexts, roughTokenEstimate } from "../usage/estimate.ts";

const tokens = (allowance: number, promptTokens = 0) =>
  createBudgetGuard({ allowance, promptTokens, inputWeight: 1, outputWeight: 1, message: "stopped" });

Deno.test("budget guard: counts only the texts added since the last check, and stops at the one that crosses", () => {
  const guard = tokens(10, 4); // 4 prompt tokens, so 6 output tokens (24 characters) fit
  const texts = new StreamTexts();
  texts.push("abcdefgh"); // 2 tokens
  guard.check(texts);
  guard.check(texts); // nothing new: not counted twice
  assert.equal(guard.outputTokens, 2);
  texts.push("abcdefghijklmnop"); // 24 characters in all: 6 tokens, exactly the allowance
  guard.check(texts);
  assert.equal(guard.outputTokens, 6);
  texts.push("x"); // 25 characters: 7 tokens, over
  assert.throws(() => guard.check(texts), (err: unknown) => {
    assert.ok(err instanceof BudgetStop);
    assert.equal(err.status, 429);
    assert.equal(err.code, "insufficient_quota");
    assert.equal(err.type, "insufficient_quota");
    assert.equal(err.message, "stopped");
    return true;
  });
  // The texts that crossed are counted once: the error event written after the stop passes the check.
  guard.check(texts);
  assert.equal(guard.outputTokens, 7);
});

Deno.test("budget guard: a money budget weighs prompt and output at their prices", () => {
  // $1 / $4 per million tokens; 1,000 prompt tokens = $0.001; allowance $0.003 leaves $0.002 = 500 output tokens.
  const guard = createBudgetGuard({
    allowance: 0.003,
    promptTokens: 1_000,
    inputWeight: 1 / 1_000_000,
    outputWeight: 4 / 1_000_000,
    message: "stopped",
  });
  const texts = new StreamTexts();
  texts.push("a".repeat(2_000)); // 500 tokens: exactly the allowance
  guard.check(texts);
  texts.push("abcd");
  assert.throws(() => guard.check(texts), BudgetStop);
});

Deno.test("budget guard: the record's error code tells a budget stop from other stream failures", () => {
  assert.equal(streamErrorCode(new BudgetStop("x")), BUDGET_STOP_CODE);
  assert.equal(streamErrorCode(new GatewayError(502, "x", { code: "upstream_error" })), "upstream_error");
  assert.equal(streamErrorCode(undefined), "stream_error");
});

/** A token with a money budget's stream allowance, answered by a target at `price`. */
function moneyContext(allowance: number, price: TokenPrices): ClientContext {
  return {
    admission: { stream: { allowance, unit: "cost" } },
    identity: { name: "svc", budget: { cost: 1, period: "month" } },
    record: {},
    answeredBy: { price },
  } as unknown as ClientContext;
}

/**
 * Streams `chunks` (each pushed, as reasoning or not) through `streamBudgetGuard` and returns the number of
 * chunks the client was sent before the stop (all of them when not stopped), with the output so far.
 */
function streamUntilStopped(
  guard: ReturnType<typeof streamBudgetGuard>,
  chunks: readonly { text: string; reasoning?: boolean }[],
): { sent: number; stopped: boolean } {
  const texts = new StreamTexts();
  for (let i = 0; i < chunks.length; i++) {
    if (chunks[i].reasoning) texts.pushReasoning(chunks[i].text);
    else texts.push(chunks[i].text);
    try {
      guard!.check(texts);
    } catch (err) {
      assert.ok(err instanceof BudgetStop);
      return { sent: i, stopped: true };
    }
  }
  return { sent: chunks.length, stopped: false };
}

// gpt-5.4's catalog shape (base $2.50 / $15, above 272K $5 / $22.50), the threshold lowered so the prompt is small.
const TIERED: TokenPrices = {
  input: 2.5,
  output: 15,
  long_context: { above: 1_000, input: 5, output: 22.5 },
};

Deno.test("stop_streams: a stream whose prompt is above a long-context tier is weighed at the tier's rates, as it is settled", () => {
  const chat = { model: "a", messages: [{ role: "user", content: "x".repeat(40_000) }] } as ChatRequest;
  const promptTokens = roughTokenEstimate(promptTexts(chat)); // the guard's own prompt count: 10,004
  assert.ok(promptTokens > TIERED.long_context!.above);
  const allowance = 0.06;
  // 100-token chunks (400 characters). Settled at the tier's rates, the prompt costs $0.05002 and each chunk
  // $0.00225: 4 fit, the 5th crosses. (At the base rates, $0.02501 and $0.0015: 23 would have been sent.)
  const chunks = Array.from({ length: 30 }, () => ({ text: "a".repeat(400) }));
  const { sent, stopped } = streamUntilStopped(
    streamBudgetGuard(moneyContext(allowance, TIERED), chat),
    chunks,
  );
  assert.equal(stopped, true);
  assert.equal(sent, 4);
  const settled = (n: number) => costOfUsage(TIERED, { prompt: promptTokens, completion: n * 100 }).total;
  assert.ok(
    settled(sent) <= allowance,
    `what the client was sent settles within the allowance ($${settled(sent)})`,
  );
  assert.ok(settled(sent + 1) > allowance, "the chunk withheld is the one that would have crossed it");
});

Deno.test("stop_streams: a prompt at or below the tier's threshold is weighed at the base rates", () => {
  const chat = { model: "a", messages: [{ role: "user", content: "x".repeat(3_000) }] } as ChatRequest;
  const promptTokens = roughTokenEstimate(promptTexts(chat)); // 754
  assert.ok(promptTokens <= TIERED.long_context!.above);
  const allowance = 0.02;
  const chunks = Array.from({ length: 40 }, () => ({ text: "a".repeat(400) }));
  const { sent, stopped } = streamUntilStopped(
    streamBudgetGuard(moneyContext(allowance, TIERED), chat),
    chunks,
  );
  assert.equal(stopped, true);
  const settled = (n: number) => costOfUsage(TIERED, { prompt: promptTokens, completion: n * 100 }).total;
  assert.ok(settled(sent) <= allowance);
  assert.ok(settled(sent + 1) > allowance);
});

Deno.test("stop_streams: reasoning text is weighed at a reasoning rate priced apart, the answer's text at output's", () => {
  const price: TokenPrices = { input: 1, output: 2, reasoning: 20 };
  const chat = { model: "a", messages: [{ role: "user", content: "Hi" }] } as ChatRequest;
  const promptTokens = roughTokenEstimate(promptTexts(chat));
  const allowance = 0.0101; // the prompt's few tokens at $1/M and $0.01 of output
  const settled = (reasoning: number, said: number) =>
    costOfUsage(price, { prompt: promptTokens, completion: reasoning + said, reasoning }).total;
  // 100 tokens of reasoning per chunk: $0.002 each at $20/M, so 5 fit and the 6th crosses (at $2/M: 50 fit).
  const thinking = Array.from({ length: 60 }, () => ({ text: "r".repeat(400), reasoning: true }));
  const reasoned = streamUntilStopped(streamBudgetGuard(moneyContext(allowance, price), chat), thinking);
  assert.equal(reasoned.stopped, true);
  assert.equal(reasoned.sent, 5);
  assert.ok(settled(reasoned.sent * 100, 0) <= allowance);
  assert.ok(settled((reasoned.sent + 1) * 100, 0) > allowance, `stopped after ${reasoned.sent} chunks`);
  // The same stream of answer text is charged at output's $2/M: 40 chunks fit.
  const said = Array.from({ length: 40 }, () => ({ text: "s".repeat(400) }));
  assert.equal(
    streamUntilStopped(streamBudgetGuard(moneyContext(allowance, price), chat), said).stopped,
    false,
  );
  assert.ok(settled(0, 40 * 100) <= allowance);
  // Both in one stream: 20 chunks of text ($0.004) leave room for 3 of reasoning ($0.006), not a 4th.
  const mixed = [...said.slice(0, 20), ...thinking.slice(0, 10)];
  const both = streamUntilStopped(streamBudgetGuard(moneyContext(allowance, price), chat), mixed);
  assert.equal(both.sent, 23);
  assert.ok(settled(300, 2_000) <= allowance && settled(400, 2_000) > allowance);
});

Deno.test("budget guard: a stop carries its budget, for the error shapes that say when it resets", () => {
  const quota = { scope: "token", unit: "tokens", limit: 10, period: "day", resetsAt: 86_400_000 } as const;
  const guard = createBudgetGuard({
    allowance: 1,
    promptTokens: 0,
    inputWeight: 1,
    outputWeight: 1,
    message: "stopped",
    quota,
  });
  const texts = new StreamTexts();
  texts.push("a".repeat(40));
  assert.throws(() => guard.check(texts), (err: unknown) => err instanceof BudgetStop && err.quota === quota);
});
