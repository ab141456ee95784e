/**
 * Two Redis outages back to back, under `fail_open`: a request admitted by the local limiter in the first is
 * still running when Redis answers (its reservation handed over to the shared counter) and ends with more
 * used than it reserved as the second begins, or in it. That spend must count in the second outage's local
 * limiter, for a token's budget and an end user's alike: the hand-over of the first outage leaves the local
 * counter that holds the reservation in place (at what it still owes), so the request's settlement lands on
 * it. The budget is 400 tokens a day, 10 spent on Redis (read: 390 left) before the first outage.
 */
import assert from "node:assert/strict";
import type { CounterStore, PeriodCheck, SettleOps } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import { createPolicyEngine, PolicyDenied } from "./engine.ts";
import { clock, model, token } from "./engine_test_helpers.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { PolicyRequest } from "./types.ts";

const BUDGET = 400;
const DAY = "2026-11-22"; // the helpers' clock

/** A shared store in memory, `settle` counting a reservation once (Redis's marker); whose budget is 400. */
function setup(owner: "token" | "end user") {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const state = { down: false, settles: [] as SettleOps[], gate: undefined as Promise<void> | undefined };
  const settled = new Set<string>();
  const { store: switched, guard } = switchableStore(inner, state);
  const shared: CounterStore = {
    ...switched,
    async settle(ops) {
      state.settles.push(ops);
      await state.gate;
      await guard(async () => {
        if (ops.reservation && settled.has(ops.reservation)) return;
        if (ops.reservation) settled.add(ops.reservation);
        for (const p of ops.periods) await inner.periodAdd(p.key, p.period, p.amount, p.expiresAt);
      });
    },
  };
  const store = createResilientCounterStore(shared, {
    onFailure: "fail_open",
    expectedReplicas: 1,
    // Every call tries the shared store while it is down: the test's clock stands still.
    probeIntervalMs: 0,
    now: c.now,
  });
  const budgetConfig = { tokens: BUDGET, period: "day" } as const;
  const identity = owner === "token"
    ? token({ budget: budgetConfig })
    : token({ endUserLimits: { max_users: 100, budget: budgetConfig } });
  const budget: PeriodCheck = {
    kind: "period",
    key: owner === "token"
      ? `token:${identity.id}:budget:tokens`
      : `end_user:token:${identity.id}:alice:budget:tokens`,
    period: DAY,
    limit: BUDGET,
  };
  const engine = createPolicyEngine(store, { now: c.now });
  const req = (estimatedTokens: number): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model: model(),
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }], user: "alice" },
    estimatedTokens,
  });
  /** Whether `tokens` are admitted; an admitted request is settled at once with what it estimated. */
  const spend = async (tokens: number): Promise<boolean> => {
    try {
      await (await engine.admit(req(tokens))).settle({ tokens, cost: 0 });
      return true;
    } catch (err) {
      if (err instanceof PolicyDenied) return false;
      throw err;
    }
  };
  /** Everything spendable while the shared store is down, in steps of 10. */
  const spendOutage = async () => {
    state.down = true;
    let spent = 0;
    while (await spend(10)) spent += 10;
    return spent;
  };
  /** Brings the shared store back; the next call (an explain's read) hands the outage's spend over. */
  const recover = () => {
    state.down = false;
    return store.peek!([budget]);
  };
  return { inner, state, store, engine, req, spend, spendOutage, recover, budget };
}

for (const owner of ["token", "end user"] as const) {
  Deno.test(`fail_open, ${owner} budget: what a request of the first outage used beyond its reservation counts in the second`, async () => {
    const { inner, state, store, engine, req, spend, spendOutage, recover, budget } = setup(owner);
    assert.equal(await spend(10), true); // on the shared store: 390 left, read
    state.down = true;
    const running = await engine.admit(req(100)); // reserved locally
    await recover(); // the 100 handed over: 290 left
    state.down = true; // the second outage, which an explain's read finds
    assert.equal((await store.peek!([budget])).source, "local");
    await running.settle({ tokens: 300, cost: 0 }); // 200 beyond its reservation, owed
    // 10 + 300 spent: 90 left to spend in the second outage, not 290.
    assert.equal(await spendOutage(), 90);
    await recover(); // what the second outage owes handed over: the shared budget spent whole, not beyond
    assert.equal(await inner.periodGet(budget.key, DAY), BUDGET);
  });

  Deno.test(`fail_open, ${owner} budget: what a request settles as the second outage begins counts in it`, async () => {
    const { inner, state, engine, req, spend, spendOutage, recover, budget } = setup(owner);
    assert.equal(await spend(10), true);
    state.down = true;
    const running = await engine.admit(req(100));
    await recover();
    // Redis is away again, the store not told yet: the request's 200 beyond its reservation is settled locally,
    // and its hand-over fails (the shared counter may never get it).
    state.down = true;
    await running.settle({ tokens: 300, cost: 0 });
    assert.equal(await spendOutage(), 90);
    await recover();
    assert.ok(await inner.periodGet(budget.key, DAY) <= BUDGET, "the shared budget is not overspent");
  });

  Deno.test(`fail_open, ${owner} budget: a request of an outage whose hand-over failed settles into the next`, async () => {
    const { state, store, engine, req, spend, spendOutage, budget } = setup(owner);
    assert.equal(await spend(10), true);
    state.down = true;
    const running = await engine.admit(req(100));
    // Redis answers one call, then is away again while the hand-over of the 100 is under way: it fails.
    let open!: () => void;
    state.gate = new Promise((resolve) => open = resolve);
    state.down = false;
    const recovered = store.peek!([budget]);
    while (state.settles.length === 0) await new Promise((r) => setTimeout(r, 0));
    state.down = true;
    open();
    state.gate = undefined;
    await recovered;
    await running.settle({ tokens: 300, cost: 0 });
    assert.equal(await spendOutage(), 90);
  });
}
