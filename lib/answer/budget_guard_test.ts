import assert from "node:assert/strict";
import { StreamTexts } from "../usage/stream_texts.ts";
import { GatewayError } from "../errors.ts";
import { BUDGET_STOP_CODE, BudgetStop, createBudgetGuard, streamErrorCode } from "./budget_guard.ts";

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
