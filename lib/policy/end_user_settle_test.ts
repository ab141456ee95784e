/**
 * Settling the requests of end users forgotten under `max_users` while those requests ran. The user's counters
 * went with it, its requests' reservations with them: their settlements must not bring the counters back (one
 * per user forgotten, kept until the period ends, past the bound `max_users` promises), whether the request
 * used less than its estimate or more (the usual case: the estimate is the prompt unless `max_tokens` is set).
 * A user still tracked is settled exactly as before: its budget holds what it really used.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import type { EndUserLimitsConfig } from "../config/schema.ts";
import type { Check, CounterStore } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine, type PolicyEngine } from "./engine.ts";
import { clock, denial, model, token } from "./engine_test_helpers.ts";
import { createRedisCounterStore } from "./redis_counter_store.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import type { Admission, PolicyRequest } from "./types.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
const DAY = "2026-11-22";

function limits(over: Partial<EndUserLimitsConfig> = {}): EndUserLimitsConfig {
  return { max_users: 100, budget: { tokens: 1_000_000, period: "day" }, ...over };
}

const identity = (endUserLimits: EndUserLimitsConfig) => token({ endUserLimits });

function request(endUserLimits: EndUserLimitsConfig) {
  const id = identity(endUserLimits);
  return (user: string, estimatedTokens = 20): PolicyRequest => ({
    identity: id,
    endpoint: "chat",
    model: model(),
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }], user },
    estimatedTokens,
  });
}

/** The key of a user's budget counter on the token's block. */
const budgetKey = (user: string) => `end_user:token:${identity(limits()).id}:${user}:budget:tokens`;
const budgetCheck = (user: string): Check => ({
  kind: "period",
  key: budgetKey(user),
  period: DAY,
  limit: 1e6,
});

/**
 * `users` invented users, each sending one request, with `inFlight` of them running at once (so each settles
 * after its user was pushed out of the list), each settling `used` tokens against an estimate of 20.
 */
async function invented(engine: PolicyEngine, req: ReturnType<typeof request>, users: number, used: number) {
  const running: Admission[] = [];
  for (let i = 0; i < users; i++) {
    running.push(await engine.admit(req(`invented-${i}`)));
    if (running.length > 200) await running.shift()!.settle({ tokens: used, cost: 0 });
  }
  for (const a of running) await a.settle({ tokens: used, cost: 0 });
}

for (const alerts of [false, true]) {
  for (const used of [10, 30]) {
    Deno.test(`end users, settled ${used} of 20 estimated${alerts ? ", budget alerts on" : ""}: users forgotten while their requests ran leave no counter`, async () => {
      const c = clock();
      const store = createMemoryCounterStore(c.now);
      // Budget alerts keep each budget's settled spend beside its counter: forgotten with the user too.
      const engine = createPolicyEngine(store, {
        now: c.now,
        ...(alerts ? { onBudgetSettled: () => {} } : {}),
      });
      await invented(engine, request(limits()), 2_000, used);
      assert.equal(engine.endUsers!.size(), 100);
      // A budget counter per user tracked, and its settled spend with alerts on.
      const bound = alerts ? 200 : 100;
      assert.ok(store.size() <= bound, `counters bounded with the users: ${store.size()} (at most ${bound})`);
      // The most recent users hold what they used; the first ones were forgotten.
      assert.equal(await store.periodGet(budgetKey("invented-1999"), DAY), used);
      assert.equal(await store.periodGet(budgetKey("invented-0"), DAY), 0);
    });
  }
}

Deno.test("end users: a user still tracked is settled to what it really used, over or under its estimate", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const engine = createPolicyEngine(store, { now: c.now, onBudgetSettled: () => {} });
  const req = request(limits({ budget: { tokens: 100, period: "day" } }));
  const over = await engine.admit(req("alice", 20));
  const under = await engine.admit(req("alice", 20));
  const unestimated = await engine.admit(req("alice", 0)); // reserves nothing: settling makes its counter
  await over.settle({ tokens: 30, cost: 0 });
  await under.settle({ tokens: 5, cost: 0 });
  await unestimated.settle({ tokens: 7, cost: 0 });
  assert.equal(await store.periodGet(budgetKey("alice"), DAY), 42);
  assert.equal(await store.periodGet(`${budgetKey("alice")}:spent`, DAY), 42);
  // 42 used of 100: an estimate of 60 no longer fits.
  assert.equal((await denial(engine.admit(req("alice", 60)))).rule, "end_user.budget");
  await engine.admit(req("alice", 58));
});

Deno.test("end users, fail_open: a forgotten user's local settlement recreates no local counter, yet is handed over to the shared one", async () => {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const state = { down: true };
  const store = createResilientCounterStore(switchableStore(inner, state).store, {
    onFailure: "fail_open",
    expectedReplicas: 1,
    probeIntervalMs: 0,
    now: c.now,
  });
  const engine = createPolicyEngine(store, { now: c.now });
  const req = request(limits({ max_users: 2 }));
  const a = await engine.admit(req("a")); // decided locally: Redis is away
  await engine.admit(req("b"));
  await engine.admit(req("c")); // "a" is forgotten, its local counter with it
  await a.settle({ tokens: 30, cost: 0 });
  const peek = await store.peek!([budgetCheck("a")]);
  assert.equal(peek.source, "local");
  assert.equal(peek.results[0].used, 0, "no local counter brought back for a user forgotten");
  // Redis answers again: what "a" really used reaches the shared counter, which no replica forgets.
  state.down = false;
  await store.peek!([budgetCheck("a")]);
  assert.equal(await inner.periodGet(budgetKey("a"), DAY), 30);
});

Deno.test("end users, on Redis: users forgotten by a replica still settle exactly on the shared counters", async () => {
  const c = clock();
  const keyPrefix = `test:end_user_settle:${crypto.randomUUID()}:`;
  const shared = createRedisCounterStore({ url: REDIS_URL, keyPrefix, timeoutMs: 1_000, clock: c.now });
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  try {
    assert.equal(await shared.whenReady(5_000), true, "Redis at 127.0.0.1:6379 must be running (.ci/run)");
    const store: CounterStore = createResilientCounterStore(shared, {
      onFailure: "fail_open",
      expectedReplicas: 1,
      now: c.now,
    });
    const engine = createPolicyEngine(store, { now: c.now, onBudgetSettled: () => {} });
    await invented(engine, request(limits()), 300, 30);
    assert.equal(engine.endUsers!.size(), 100);
    // The replica's list bounds its memory only: every user's shared budget holds what it really used.
    for (const i of [0, 1, 150, 299]) {
      assert.equal(await store.periodGet(budgetKey(`invented-${i}`), DAY), 30, `invented-${i}`);
      assert.equal(await store.periodGet(`${budgetKey(`invented-${i}`)}:spent`, DAY), 30, `invented-${i}`);
    }
  } finally {
    const keys = await redis.keys(`${keyPrefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await shared.close();
    redis.disconnect();
  }
});

Deno.test("end users: a user forgotten while its request ran, then back, keeps the spend of the request it was tracked for", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const engine = createPolicyEngine(store, { now: c.now });
  const req = request(limits({ max_users: 2 }));
  const first = await engine.admit(req("alice", 100));
  for (const user of ["x1", "x2"]) await (await engine.admit(req(user, 10))).settle({ tokens: 10, cost: 0 });
  const back = await engine.admit(req("alice", 100));
  // The first request ends having used nothing: its refund meets the counter the second one made afresh.
  await first.settle({ tokens: 0, cost: 0 });
  await back.settle({ tokens: 150, cost: 0 });
  // The refund was of the counter forgotten: it takes nothing of the second request's reservation.
  assert.equal(
    await store.periodGet(budgetKey("alice"), DAY),
    150,
    "the returning user's budget counts its use",
  );
});
