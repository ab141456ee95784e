/**
 * `budget.stop_streams` under `fail_open`: a stream the local limiter admitted may use what that limiter took
 * for it (its reservation capped at the replica's share, limit ÷ `expected_replicas`) plus what the share had
 * left, the amount its settlement corrects from too. Allowed its uncapped estimate instead, a stream estimated
 * above the share would run past the replica's share before it was cut.
 */
import assert from "node:assert/strict";
import type { BudgetConfig } from "../config/schema.ts";
import type { RoutedTarget } from "../config/types.ts";
import { BudgetStop, createBudgetGuard } from "../answer/budget_guard.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import { createPolicyEngine } from "./engine.ts";
import { clock, model, token } from "./engine_test_helpers.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { StreamAllowance } from "./stream_allowance.ts";

/** 4 expected replicas; a target priced $10 in, $100 out per million tokens (reserved at $100 per million). */
function setup(budget: BudgetConfig) {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const state = { down: true };
  // Every call fails while `down`, as a Redis call that timed out.
  const shared = switchableStore(inner, state).store;
  const store = createResilientCounterStore(shared, {
    onFailure: "fail_open",
    expectedReplicas: 4,
    probeIntervalMs: 0,
    now: c.now,
  });
  const engine = createPolicyEngine(store, { now: c.now });
  const identity = token({ budget });
  const priced = model({
    targets: [{ price: { input: 10, output: 100 } } as unknown as RoutedTarget],
  });
  const admit = (estimatedTokens: number) =>
    engine.admit({ identity, endpoint: "chat", model: priced, estimatedTokens });
  return { state, admit };
}

/**
 * The most output tokens a stream with `allowance` and a prompt of `promptTokens` gets to send before the
 * budget guard cuts it (what the client notices), found by feeding the guard one token (4 characters) more
 * at a time from `from`.
 */
function outputBeforeCut(
  allowance: StreamAllowance | null | undefined,
  promptTokens: number,
  from: number,
): number {
  assert.ok(allowance, "the stream has an allowance");
  const money = allowance.unit === "cost";
  const guard = createBudgetGuard({
    allowance: allowance.allowance,
    promptTokens,
    inputWeight: money ? 10 / 1_000_000 : 1,
    outputWeight: money ? 100 / 1_000_000 : 1,
    message: "stopped",
  });
  for (let tokens = from;; tokens++) {
    try {
      guard.check({ chars: tokens * 4 });
    } catch (err) {
      assert.ok(err instanceof BudgetStop);
      return tokens - 1;
    }
  }
}

Deno.test("fail_open stop_streams, token budget: a stream estimated above the share is cut at the share", async () => {
  // 1000 tokens a day over 4 replicas: a share of 250. Estimated 600, reserved 250, nothing left after it.
  const { admit } = setup({ tokens: 1000, period: "day", stop_streams: true });
  const a = await admit(600);
  assert.deepEqual(a.stream, { unit: "tokens", allowance: 250 });
  // A 100-token prompt leaves 150 tokens of output, not the 500 its estimate would have allowed.
  assert.equal(outputBeforeCut(a.stream, 100, 100), 150);
});

Deno.test("fail_open stop_streams, money budget: a stream estimated above the share is cut at the share", async () => {
  // $100 a day over 4 replicas: $25 each. 600,000 tokens estimated at $100 per million: $60, reserved $25.
  const { admit } = setup({ cost: 100, period: "day", stop_streams: true });
  const a = await admit(600_000);
  assert.deepEqual(a.stream, { unit: "cost", allowance: 25 });
  // No prompt: $25 of output at $100 per million is 250,000 tokens (not the 600,000 of the estimate's $60).
  assert.equal(outputBeforeCut(a.stream, 0, 249_990), 250_000);
});

Deno.test("fail_open stop_streams: within the share, or on the shared store, the allowance is unchanged", async () => {
  // Below the share nothing is capped: its 100 plus the 150 left of the share.
  const local = setup({ tokens: 1000, period: "day", stop_streams: true });
  assert.deepEqual((await local.admit(100)).stream, { unit: "tokens", allowance: 250 });
  // Redis answering: the whole budget, the estimate reserved uncapped (600 plus the 400 left).
  const up = setup({ tokens: 1000, period: "day", stop_streams: true });
  up.state.down = false;
  assert.deepEqual((await up.admit(600)).stream, { unit: "tokens", allowance: 1000 });
});
