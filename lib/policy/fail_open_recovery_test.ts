/**
 * A budget across a Redis outage under `fail_open`: two replicas (two engines, each with its own Redis
 * connection through a proxy the test cuts) spend their local shares while Redis is away; once it answers
 * again, the shared budget counter holds what the fleet spent meanwhile, counted once, and the next
 * admissions on both replicas are judged against it. Runs against the Redis of the development and CI
 * machines (127.0.0.1:6379) under a key prefix of its own; the outage is the proxy's, not the server's.
 */
import assert from "node:assert/strict";
import { startTcpProxy } from "../../tests/helpers/tcp_proxy.ts";
import { createPolicyEngine, PolicyDenied } from "./engine.ts";
import { chatRequest, clock, token } from "./engine_test_helpers.ts";
import { createRedisCounterStore, type RedisCounterStore } from "./redis_counter_store.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { PolicyRequest } from "./types.ts";

const BUDGET = 400;
const identity = token({ budget: { tokens: BUDGET, period: "day" } });
const budgetKey = `token:${identity.id}:budget:tokens`;
const DAY = "2026-11-22"; // the helpers' clock

const req = (estimatedTokens: number): PolicyRequest => chatRequest(identity, estimatedTokens);

/** Whether an admission of `tokens` passes; an admitted one is settled at once with what it estimated. */
async function spend(engine: ReturnType<typeof createPolicyEngine>, tokens: number): Promise<boolean> {
  try {
    await (await engine.admit(req(tokens))).settle({ tokens, cost: 0 });
    return true;
  } catch (err) {
    if (err instanceof PolicyDenied && err.rule === "token.budget") return false;
    throw err;
  }
}

Deno.test("fail_open: the spend of a Redis outage reaches the shared budget once Redis answers again", async () => {
  const c = clock();
  const keyPrefix = `test:${crypto.randomUUID()}:`;
  const proxy = startTcpProxy(6379);
  const direct = createRedisCounterStore({ url: "redis://127.0.0.1:6379", keyPrefix, timeoutMs: 1_000 });
  const shareds: RedisCounterStore[] = [];
  const replica = () => {
    const shared = createRedisCounterStore({
      url: `redis://127.0.0.1:${proxy.port}`,
      keyPrefix,
      timeoutMs: 300,
      clock: c.now,
    });
    shareds.push(shared);
    const store = createResilientCounterStore(shared, {
      onFailure: "fail_open",
      expectedReplicas: 2,
      // Every call tries Redis while it is down: the test's clock stands still.
      probeIntervalMs: 0,
      now: c.now,
    });
    return { shared, store, engine: createPolicyEngine(store, { now: c.now }) };
  };
  const counter = () => direct.periodGet(budgetKey, DAY);
  try {
    const a = replica();
    const b = replica();
    for (const s of [direct, a.shared, b.shared]) {
      assert.equal(await s.whenReady(5_000), true, "Redis must run");
    }

    // Before the outage: 10 tokens on each replica, on Redis.
    assert.equal(await spend(a.engine, 10), true);
    assert.equal(await spend(b.engine, 10), true);
    assert.equal(await counter(), 20);

    proxy.down();
    // A request admitted locally and still running when Redis comes back.
    const running = await a.engine.admit(req(10));
    assert.equal(a.store.isUp(), false);
    let outage = 10;
    for (const r of [a, b]) while (await spend(r.engine, 10)) outage += 10;
    // Each local share starts from what the budget had left when that replica last read it, ÷ 2 replicas:
    // A read 390 left (195 each), B 380 (190 each); not 200 each of the whole budget.
    assert.equal(outage, 380);

    proxy.up();
    for (const s of [a.shared, b.shared]) assert.equal(await s.whenReady(5_000), true);
    // The first call of each replica that reaches Redis again (here an explain's read) hands its spend over.
    for (const r of [a, b]) {
      const read = await r.store.peek!([{ kind: "period", key: budgetKey, period: DAY, limit: BUDGET }]);
      assert.equal(read.source, "store");
      assert.equal(r.store.isUp(), true);
    }
    assert.equal(await counter(), 20 + outage, "the outage's spend is on the shared counter, once");

    // The request still running settles after the recovery: 4 tokens used of the 10 it reserved locally.
    await running.settle({ tokens: 4, cost: 0 });
    assert.equal(await counter(), 20 + outage - 6);

    // 394 of 400 spent: 10 more is refused on either replica, on Redis; 6 passes, once.
    assert.equal(await spend(a.engine, 10), false);
    assert.equal(await spend(b.engine, 10), false);
    assert.equal(await spend(b.engine, 6), true);
    assert.equal(await spend(a.engine, 1), false);
    assert.equal(await counter(), BUDGET);

    // A second outage: each replica last read the budget spent, so neither has a local share left.
    proxy.down();
    assert.equal(await spend(a.engine, 1), false);
    assert.equal(await spend(b.engine, 1), false);
    assert.equal(a.store.isUp() || b.store.isUp(), false);
  } finally {
    for (const s of shareds) await s.close();
    await direct.close();
    await proxy.close();
  }
});

Deno.test("fail_open: an outage's spend over 50,000 end users' budgets reaches Redis, the store stays up", async () => {
  const c = clock();
  const keyPrefix = `test:${crypto.randomUUID()}:`;
  const proxy = startTcpProxy(6379);
  const direct = createRedisCounterStore({ url: "redis://127.0.0.1:6379", keyPrefix, timeoutMs: 2_000 });
  const shared = createRedisCounterStore({
    url: `redis://127.0.0.1:${proxy.port}`,
    keyPrefix,
    timeoutMs: 2_000,
    clock: c.now,
  });
  // The test's clock stands still: after the first failure, no call tries Redis until it is moved on.
  const store = createResilientCounterStore(shared, {
    onFailure: "fail_open",
    expectedReplicas: 1,
    now: c.now,
  });
  const expiresAt = c.now() + 3_600_000;
  const user = (i: number) => ({
    kind: "period" as const,
    key: `end_user:token:t:u${i}:budget:tokens`,
    period: DAY,
    limit: 1000,
    amount: 7,
    expiresAt,
  });
  try {
    for (const s of [direct, shared]) assert.equal(await s.whenReady(5_000), true, "Redis must run");
    proxy.down();
    for (let i = 0; i < 50_000; i++) assert.equal((await store.reserve([user(i)])).ok, true);
    assert.equal(store.isUp(), false);
    proxy.up();
    assert.equal(await shared.whenReady(5_000), true);
    c.advance(500); // the probe interval
    // One settlement of it all would pass 150,000 arguments to one call: more than a call takes.
    assert.equal((await store.peek!([user(0)])).source, "store");
    assert.equal(store.isUp(), true, "the hand-over went through");
    for (const i of [0, 25_000, 49_999]) assert.equal(await direct.periodGet(user(i).key, DAY), 7);
  } finally {
    await shared.close();
    await direct.close();
    await proxy.close();
  }
});
