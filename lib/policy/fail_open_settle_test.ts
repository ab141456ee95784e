/**
 * Settling what the local limiter of `fail_open` admitted: it charges a TPM bucket or reserves a budget at
 * most the replica's share (limit ÷ `expected_replicas`), so settling must correct from that capped amount,
 * not from the request's estimate. Else a request estimated above the share and really using it is counted
 * only at the share (the replica lets several times its share through), and one that used less than its
 * estimate is refunded more than it paid, cancelling what other requests were charged.
 */
import assert from "node:assert/strict";
import type { LimitsConfig } from "../config/schema.ts";
import type { Check } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import { createPolicyEngine } from "./engine.ts";
import { chatRequest, clock, denial, token } from "./engine_test_helpers.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { PolicyRequest } from "./types.ts";

const DAY = "2026-11-22";

/** tpm 1000 and a budget of 1000 tokens a day over 4 replicas: a share of 250 each while Redis is away. */
function setup(opts: { limits?: LimitsConfig; budget?: boolean } = {}) {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const state = { down: true };
  // Every call fails while `down`, as a Redis call that timed out.
  const shared = switchableStore(inner, state).store;
  const store = createResilientCounterStore(shared, {
    onFailure: "fail_open",
    expectedReplicas: 4,
    // Every call tries Redis first: the clock stands still, so buckets do not refill between the checks.
    probeIntervalMs: 0,
    now: c.now,
  });
  const errors: unknown[] = [];
  const engine = createPolicyEngine(store, { now: c.now, onError: (e) => errors.push(e) });
  const identity = token({
    limits: opts.limits ?? null,
    budget: opts.budget ? { tokens: 1000, period: "day" } : null,
  });
  const req = (estimatedTokens: number): PolicyRequest => chatRequest(identity, estimatedTokens);
  const tpm: Check = {
    kind: "bucket",
    key: `token:${identity.id}:tpm`,
    limit: 1000,
    windowMs: 60_000,
    amount: 0,
  };
  const budget: Check = {
    kind: "period",
    key: `token:${identity.id}:budget:tokens`,
    period: DAY,
    limit: 1000,
  };
  /** What the local limiter holds (the shared store must be down for `peek` to answer locally). */
  const local = async (check: Check) => {
    const peek = await store.peek!([check]);
    assert.equal(peek.source, "local");
    return peek.results[0].used;
  };
  return { state, inner, store, engine, errors, req, tpm, budget, local };
}

Deno.test("fail_open TPM: a request estimated and using above the share is charged its real usage locally", async () => {
  const { engine, req, tpm, local } = setup({ limits: { tpm: 1000 } });
  // Charged 250 (the share) up front; settling adds 600 − 250, leaving the bucket 350 in debt.
  const a = await engine.admit(req(600));
  await a.settle({ tokens: 600, cost: 0 });
  assert.equal(await local(tpm), 600);
  assert.equal((await denial(engine.admit(req(10)))).rule, "token.tpm");
});

Deno.test("fail_open TPM: an over-estimate is refunded what it paid, not its estimate; others' charges stay", async () => {
  const { engine, req, tpm, local } = setup({ limits: { tpm: 1000 } });
  const b = await engine.admit(req(0)); // reads the bucket, charged at settling
  const a = await engine.admit(req(600)); // charged the share, 250
  await b.settle({ tokens: 100, cost: 0 });
  await a.settle({ tokens: 50, cost: 0 }); // refund 200, not 550
  assert.equal(await local(tpm), 150);
});

Deno.test("fail_open budget: a reservation capped at the share is settled to the real usage, both ways", async () => {
  const { engine, req, budget, local } = setup({ budget: true });
  // Under: reserved 250 of an estimated 600, used 600.
  await (await engine.admit(req(600))).settle({ tokens: 600, cost: 0 });
  assert.equal(await local(budget), 600);
  assert.equal((await denial(engine.admit(req(0)))).rule, "token.budget");

  // Over: reserved 250 of an estimated 600, used 50, while another request settles 100.
  const other = setup({ budget: true });
  const b = await other.engine.admit(other.req(0));
  const a = await other.engine.admit(other.req(600));
  await b.settle({ tokens: 100, cost: 0 });
  await a.settle({ tokens: 50, cost: 0 });
  assert.equal(await other.local(other.budget), 150);
});

Deno.test("fail_open: admitted locally, settled after Redis is back: its budget spend goes on to the shared store", async () => {
  const { state, inner, store, engine, errors, req, tpm, budget, local } = setup({
    limits: { tpm: 1000 },
    budget: true,
  });
  const a = await engine.admit(req(600)); // locally: 250 of the bucket and of the budget (the share)
  state.down = false;
  // An admission on the shared store marks it up again, and the 250 reserved locally is handed over.
  const s = await engine.admit(req(600));
  assert.equal(store.isUp(), true);
  await a.settle({ tokens: 600, cost: 0 }); // its correction (+350) follows at once
  await s.settle({ tokens: 100, cost: 0 });
  assert.deepEqual(errors, []);
  // The shared bucket holds only the request it admitted (a bucket refills; it is not handed over); the
  // shared budget holds both requests' real usage, 600 + 100.
  const sharedUsed = (await inner.peek([tpm, budget])).results.map((r) => Math.round(r.used));
  assert.deepEqual(sharedUsed, [100, 700]);
  state.down = true;
  assert.equal(await local(tpm), 600);
  assert.equal(await local(budget), 0, "what was handed over is no longer counted locally");
});

Deno.test("fail_open: admitted on Redis, settled while it is down: settles on Redis with its own amounts", async () => {
  const { state, inner, engine, errors, req, tpm, budget, local } = setup({
    limits: { tpm: 1000 },
    budget: true,
  });
  state.down = false;
  const a = await engine.admit(req(600));
  state.down = true;
  await a.settle({ tokens: 100, cost: 0 });
  // The shared store's settlement failed (the Redis store sends it again); nothing went to the local limiter.
  assert.ok(errors.length > 0);
  assert.equal(await local(tpm), 0);
  assert.equal(await local(budget), 0);
  const sharedUsed = (await inner.peek([tpm, budget])).results.map((r) => Math.round(r.used));
  assert.deepEqual(sharedUsed, [600, 600]);
});

Deno.test("fail_open budget: a money budget's share is the exact fraction, not rounded to whole dollars", async () => {
  const { store } = setup();
  const dollars = (limit: number, amount: number): Check => ({
    kind: "period",
    key: "token:tok_money:budget:cost",
    period: DAY,
    limit,
    amount,
  });
  // $1 a day over 4 replicas is $0.25 here: $0.20 passes, another $0.10 would pass $0.25.
  assert.equal((await store.reserve([dollars(1, 0.2)])).ok, true);
  assert.equal((await store.reserve([dollars(1, 0.1)])).ok, false, "rounded up to $1, it let 4× through");
  // $10 over 4 is $2.50, not $2: $2.40 in all passes.
  const ten = (amount: number): Check => ({ ...dollars(10, amount), key: "token:tok_ten:budget:cost" });
  assert.equal((await store.reserve([ten(2)])).ok, true);
  assert.equal((await store.reserve([ten(0.4)])).ok, true, "floored to $2, it refused what the share allows");
});

Deno.test("fail_open budget: the local share is of what the budget had left when last read, not of all of it", async () => {
  const { state, engine, req, budget, local } = setup({ budget: true });
  state.down = false;
  await (await engine.admit(req(900))).settle({ tokens: 900, cost: 0 }); // 100 left: 25 per replica
  state.down = true;
  await (await engine.admit(req(20))).settle({ tokens: 20, cost: 0 });
  assert.equal((await denial(engine.admit(req(10)))).rule, "token.budget", "20 + 10 is past a share of 25");
  assert.equal(await local(budget), 20);
});

Deno.test("fail_open budget: a seed after an outage does not count twice what this replica has not handed over", async () => {
  const { state, inner, store, engine, req, budget } = setup({ budget: true });
  await (await engine.admit(req(100))).settle({ tokens: 100, cost: 0 }); // locally, owed to the shared budget
  state.down = false;
  // The usage store recorded those 100 (and 50 spent elsewhere): a seed raises the counter to 150 before
  // this replica has handed its 100 over, which it does right after.
  await store.periodRaise(budget.key, DAY, 150, Date.UTC(2026, 10, 23, 1));
  assert.equal(await inner.periodGet(budget.key, DAY), 150);
  assert.equal((await store.reserve([{ ...budget, amount: 0 }])).results[0].used, 150);
});
