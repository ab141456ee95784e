/**
 * Handing a `fail_open` outage's budget spend over to the shared counters, against a shared store in memory
 * that can be switched off, hold a settlement back or lose its answer: what the local limiter keeps
 * afterwards (only what is still owed, never a refund turned into spend), how a large hand-over is sent
 * (in bounded batches, each counted once; what a failed one leaves unsent goes at the next recovery), and
 * that a refund never takes from the shared counter a reservation it never got.
 */
import assert from "node:assert/strict";
import type { Logger } from "../log.ts";
import type { CounterStore, PeriodCheck, SettleOps } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import { createPolicyEngine, PolicyDenied } from "./engine.ts";
import { chatRequest, clock, token } from "./engine_test_helpers.ts";
import { HANDOVER_BATCH_MAX, OWED_COUNTERS_MAX } from "./outage_ledger.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { PolicyRequest } from "./types.ts";

const BUDGET = 400;
const DAY = "2026-11-22"; // the helpers' clock

/** A shared store in memory, with `settle` counting a reservation once as Redis's marker does. */
function setup() {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const state = {
    down: false,
    settles: [] as SettleOps[],
    /** Settlements wait for it while set. */
    gate: undefined as Promise<void> | undefined,
    /** Settlements (by their order, from 1) applied whose answer is lost. */
    loseAnswerOf: new Set<number>(),
  };
  const settled = new Set<string>();
  const { store: switched, guard } = switchableStore(inner, state);
  const shared: CounterStore = {
    ...switched,
    async settle(ops) {
      state.settles.push(ops);
      const n = state.settles.length;
      await state.gate;
      await guard(async () => {
        if (ops.reservation && settled.has(ops.reservation)) return;
        if (ops.reservation) settled.add(ops.reservation);
        for (const key of ops.release) await inner.release(key);
        for (const a of ops.adjust) await inner.adjust(a.bucket, a.delta);
        for (const p of ops.periods) await inner.periodAdd(p.key, p.period, p.amount, p.expiresAt);
      });
      if (state.loseAnswerOf.has(n)) throw new Error("Command timed out");
    },
  };
  const warnings: [string, Record<string, unknown>][] = [];
  const logger = {
    info: () => {},
    warn: (msg: string, fields: Record<string, unknown> = {}) => warnings.push([msg, fields]),
    error: () => {},
  } as unknown as Logger;
  const store = createResilientCounterStore(shared, {
    onFailure: "fail_open",
    expectedReplicas: 1,
    // Every call tries the shared store while it is down: the test's clock stands still.
    probeIntervalMs: 0,
    now: c.now,
    logger,
  });
  const identity = token({ budget: { tokens: BUDGET, period: "day" } });
  const budget: PeriodCheck = {
    kind: "period",
    key: `token:${identity.id}:budget:tokens`,
    period: DAY,
    limit: BUDGET,
  };
  const engine = createPolicyEngine(store, { now: c.now });
  const req = (estimatedTokens: number): PolicyRequest => chatRequest(identity, estimatedTokens);
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
  return { c, inner, state, store, engine, req, spend, spendOutage, recover, budget, warnings };
}

Deno.test("fail_open: a refund settled after the hand-over is no phantom spend in the next outage", async () => {
  const { inner, state, engine, req, spend, spendOutage, recover, budget } = setup();
  assert.equal(await spend(10), true); // on the shared store: 390 left, read
  state.down = true;
  const running = await engine.admit(req(300)); // reserved locally
  await recover(); // the 300 handed over
  await running.settle({ tokens: 10, cost: 0 }); // used 10: the refund of 290 follows on
  assert.equal(await spend(10), true); // on the shared store again: 370 left, read
  assert.equal(await inner.periodGet(budget.key, DAY), 30);
  // The next outage's local share is what the budget has left; no refund counted as spend.
  assert.equal(await spendOutage(), 370);
});

Deno.test("fail_open: a refund settled while its reservation is being handed over is no phantom spend", async () => {
  const { inner, state, engine, req, spend, spendOutage, recover, budget } = setup();
  assert.equal(await spend(10), true);
  state.down = true;
  const running = await engine.admit(req(300));
  let open!: () => void;
  state.gate = new Promise((resolve) => open = resolve);
  const recovered = recover();
  while (state.settles.length === 0) await new Promise((r) => setTimeout(r, 0));
  // The hand-over of the 300 is under way when the request settles, refunding 290.
  const settled = running.settle({ tokens: 10, cost: 0 });
  await new Promise((r) => setTimeout(r, 0));
  open();
  state.gate = undefined;
  await recovered;
  await settled;
  assert.equal(await inner.periodGet(budget.key, DAY), 20);
  assert.equal(await spend(10), true);
  assert.equal(await spendOutage(), 370);
});

/** End users' budget counters, one per user, each reserving 7 locally. */
const userBudget = (i: number, expiresAt: number): PeriodCheck => ({
  kind: "period",
  key: `end_user:token:t:u${i}:budget:tokens`,
  period: DAY,
  limit: 1000,
  amount: 7,
  expiresAt,
});

Deno.test("fail_open: an outage's spend over more counters than one batch is handed over in bounded batches", async () => {
  const { c, inner, state, store, recover, warnings } = setup();
  const users = 2 * HANDOVER_BATCH_MAX + 500;
  state.down = true;
  for (let i = 0; i < users; i++) {
    assert.equal((await store.reserve([userBudget(i, c.now() + 3_600_000)])).ok, true);
  }
  await recover();
  assert.equal(store.isUp(), true);
  assert.deepEqual(state.settles.map((s) => s.periods.length), [HANDOVER_BATCH_MAX, HANDOVER_BATCH_MAX, 500]);
  assert.equal(
    new Set(state.settles.map((s) => s.reservation)).size,
    3,
    "each batch counted once on its own",
  );
  for (const i of [0, HANDOVER_BATCH_MAX, users - 1]) {
    assert.equal(await inner.periodGet(userBudget(i, 0).key, DAY), 7);
  }
  assert.deepEqual(warnings.map(([msg]) => msg), ["rate_limit_store_down"]);
});

Deno.test("fail_open: a batch that fails leaves the rest owed for the next recovery, every counter added once", async () => {
  const { c, inner, state, store, recover } = setup();
  const users = 2 * HANDOVER_BATCH_MAX + 500;
  state.down = true;
  for (let i = 0; i < users; i++) await store.reserve([userBudget(i, c.now() + 3_600_000)]);
  // The second batch is applied but its answer is lost: the store is down again, the third batch unsent.
  state.loseAnswerOf.add(2);
  await recover();
  assert.equal(store.isUp(), false);
  assert.equal(state.settles.length, 2);
  assert.equal(await inner.periodGet(userBudget(users - 1, 0).key, DAY), 0);
  // The next recovery sends the third batch; the second is not sent again under another name.
  await recover();
  assert.equal(store.isUp(), true);
  assert.deepEqual(state.settles.map((s) => s.periods.length), [HANDOVER_BATCH_MAX, HANDOVER_BATCH_MAX, 500]);
  for (let i = 0; i < users; i++) assert.equal(await inner.periodGet(userBudget(i, 0).key, DAY), 7);
});

Deno.test("fail_open: what is owed to a budget whose period has expired is dropped and logged, not sent", async () => {
  const { c, state, store, recover, warnings } = setup();
  state.down = true;
  await store.reserve([userBudget(1, c.now() + 1_000)]);
  await store.reserve([userBudget(2, c.now() + 3_600_000)]);
  c.advance(1_000);
  await recover();
  assert.deepEqual(state.settles.map((s) => s.periods.map((p) => p.key)), [[userBudget(2, 0).key]]);
  assert.deepEqual(warnings.at(-1), ["rate_limit_store_handover_dropped", { counters: 1 }]);
});

Deno.test("fail_open: a hand-over that fails keeps the outage's spend in the local limiter while Redis is away", async () => {
  const { state, store, spendOutage } = setup();
  // Away from the start: this replica never read the budget, so its local counter is all it knows of the spend.
  assert.equal(await spendOutage(), BUDGET);
  // Redis answers one call (of another counter: this budget's amount left stays unknown), then is away again
  // while the hand-over is under way: the settlement fails.
  let open!: () => void;
  state.gate = new Promise((resolve) => open = resolve);
  state.down = false;
  const recovered = store.peek!([{
    kind: "period",
    key: "token:other:budget:tokens",
    period: DAY,
    limit: 1,
  }]);
  while (state.settles.length === 0) await new Promise((r) => setTimeout(r, 0));
  state.down = true;
  open();
  state.gate = undefined;
  await recovered;
  // The outage goes on, and the budget was spent whole in it: nothing more is spendable.
  assert.equal(await spendOutage(), 0);
});

/** Waits until the shared store has been asked `n` settlements. */
async function settlesAsked(state: { settles: unknown[] }, n: number): Promise<void> {
  while (state.settles.length < n) await new Promise((r) => setTimeout(r, 0));
}

Deno.test("fail_open: the refund of a reservation the full ledger did not owe takes no real shared spend", async () => {
  const { c, inner, state, store, engine, req, spend, recover, budget } = setup();
  assert.equal(await spend(300), true); // on the shared store: 300 spent, 100 left
  state.down = true;
  // As many end users' counters owed as the ledger holds (1,000 per call, for speed).
  for (let i = 0; i < OWED_COUNTERS_MAX; i += 1_000) {
    const users = Array.from({ length: 1_000 }, (_, j) => userBudget(i + j, c.now() + 3_600_000));
    assert.equal((await store.reserve(users)).ok, true);
  }
  const running = await engine.admit(req(100)); // reserved locally: the ledger is full, not owed
  await recover();
  assert.equal(store.isUp(), true);
  assert.equal(await inner.periodGet(budget.key, DAY), 300);
  // It used 10: its refund of 90 is of a reservation the shared budget never got.
  await running.settle({ tokens: 10, cost: 0 });
  assert.equal(await inner.periodGet(budget.key, DAY), 300, "the spend made before the outage stays");
});

/**
 * Brings the shared store back for one call whose hand-over then fails: Redis is away again while it is under
 * way, and (as after the shared store's retries ran out) it is never applied.
 */
async function failedRecovery(s: ReturnType<typeof setup>): Promise<void> {
  const { state, store, recover } = s;
  let open!: () => void;
  state.gate = new Promise((resolve) => open = resolve);
  const asked = state.settles.length;
  const recovered = recover();
  await settlesAsked(state, asked + 1);
  state.down = true;
  open();
  state.gate = undefined;
  await recovered;
  assert.equal(store.isUp(), false);
}

Deno.test("fail_open: the refund of a reservation whose hand-over failed takes no real shared spend", async () => {
  const s = setup();
  const { inner, store, engine, req, spend, recover, budget } = s;
  assert.equal(await spend(300), true);
  s.state.down = true;
  const running = await engine.admit(req(100)); // reserved locally, owed
  await failedRecovery(s);
  await recover();
  assert.equal(store.isUp(), true);
  assert.equal(await inner.periodGet(budget.key, DAY), 300);
  await running.settle({ tokens: 10, cost: 0 });
  assert.equal(await inner.periodGet(budget.key, DAY), 300, "the spend made before the outage stays");
});

Deno.test("fail_open: the refund of a reservation whose hand-over failed takes no other request's outage spend", async () => {
  const s = setup();
  const { inner, store, engine, req, spend, recover, budget } = s;
  assert.equal(await spend(200), true); // on the shared store
  s.state.down = true;
  const running = await engine.admit(req(100)); // reserved locally
  await failedRecovery(s); // its 100 never added
  assert.equal(await spend(50), true); // another request, the same budget, spent locally in the same outage
  await running.settle({ tokens: 10, cost: 0 }); // a refund of 90 the shared counter never got
  await recover();
  assert.equal(store.isUp(), true);
  assert.equal(await inner.periodGet(budget.key, DAY), 250, "the 200 before and the other request's 50");
});

Deno.test("fail_open: the refund of a reservation whose hand-over failed takes back no earlier outage's spend", async () => {
  const s = setup();
  const { inner, state, store, engine, req, spend, recover, budget } = s;
  assert.equal(await spend(200), true);
  state.down = true;
  assert.equal(await spend(50), true); // the first outage's 50, spent locally
  await recover();
  assert.equal(await inner.periodGet(budget.key, DAY), 250);
  state.down = true; // a second outage
  const running = await engine.admit(req(100));
  await failedRecovery(s); // its 100 never added
  await running.settle({ tokens: 0, cost: 0 });
  await recover();
  assert.equal(store.isUp(), true);
  assert.equal(await inner.periodGet(budget.key, DAY), 250, "the first outage's 50 stays");
});

Deno.test("fail_open: each refund takes back its own reservation, whether still owed or handed over", async () => {
  const { inner, state, store, engine, req, spend, recover, budget } = setup();
  assert.equal(await spend(150), true);
  state.down = true;
  const owed = await engine.admit(req(100));
  const handed = await engine.admit(req(100));
  assert.equal(await spend(50), true);
  await owed.settle({ tokens: 10, cost: 0 }); // settled while Redis is away: its 100 is owed as 10
  await recover();
  assert.equal(store.isUp(), true);
  assert.equal(await inner.periodGet(budget.key, DAY), 150 + 10 + 100 + 50);
  await handed.settle({ tokens: 30, cost: 0 }); // after the hand-over: its refund of 70 follows on
  assert.equal(await inner.periodGet(budget.key, DAY), 150 + 10 + 30 + 50);
});
