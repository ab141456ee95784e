/**
 * Explaining on other counter stores: on Redis (127.0.0.1:6379, under a key prefix of its own) the numbers
 * are the in-memory store's, and on the resilient wrapper while its shared store is down they say where they
 * come from (the local limiter's share, or unavailable).
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import type { CounterStore } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import type { Explanation } from "./explanation.ts";
import { createRedisCounterStore } from "./redis_counter_store.ts";
import { createResilientCounterStore, type OnFailure } from "./resilient_counter_store.ts";
import { limit, setup, T0 } from "./explain_test_helpers.ts";

const REDIS_URL = "redis://127.0.0.1:6379";

/** A shared store that fails every call, as a Redis that is away. */
function downStore(): CounterStore {
  const fail = () => Promise.reject(new Error("Command timed out"));
  return {
    reserve: fail,
    adjust: fail,
    release: fail,
    periodGet: fail,
    periodAdd: fail,
    periodRaise: fail,
    peek: fail,
  };
}

function resilient(onFailure: OnFailure): CounterStore {
  return createResilientCounterStore(downStore(), { onFailure, expectedReplicas: 3, now: () => T0 });
}

Deno.test("explain: with the shared store down, fail_open shows the local limiter's share", async () => {
  const s = setup(resilient("fail_open"));
  await (await s.admit("ci-bot", "chat-main")).settle({ tokens: 10, cost: 0 });
  const e = await s.explainFor("ci-bot", "chat-main");
  assert.deepEqual(e.counters, { source: "local" });
  // rpm 3 over 3 replicas: 1 here, taken by the request above.
  assert.deepEqual(
    [limit(e, "token.rpm").limit, limit(e, "token.rpm").local_limit, limit(e, "token.rpm").remaining],
    [3, 1, 0],
  );
  assert.equal(limit(e, "alias.rpm").local_limit, 33);
  assert.equal(e.denied_by?.rule, "token.rpm");
  assert.match(e.denied_by!.message, /Limit 1,/);
});

Deno.test("explain: with the shared store down, fail_closed says limited requests get 503", async () => {
  const s = setup(resilient("fail_closed"));
  const e = await s.explainFor("ci-bot", "chat-main");
  assert.equal(e.counters.source, "unavailable");
  assert.equal(e.allowed, false);
  assert.deepEqual([e.denied_by?.rule, e.denied_by?.status, e.denied_by?.code], [
    "policy.store",
    503,
    "rate_limit_store_unavailable",
  ]);
  assert.equal(limit(e, "token.rpm").remaining, null);
  assert.equal(e.checks.find((c) => c.rule === "token.rpm")?.ok, null);
  assert.equal(e.budget?.used, null);
});

/** The same requests on a store, then the explanations they leave. */
async function scenario(store: CounterStore): Promise<Explanation[]> {
  const s = setup(store);
  const held = await s.admit("ci-bot", "chat-main", 40);
  await (await s.admit("ci-bot", "chat-main", 25)).settle({ tokens: 31, cost: 0 });
  await (await s.admit("spender", "chat-main", 1000)).settle({ tokens: 900, cost: 0.0036 });
  const out = [
    await s.explainFor("ci-bot", "chat-main"),
    await s.explainFor("ci-bot", "chat-main"),
    await s.explainFor("spender", "chat-main"),
  ];
  await held.settle({ tokens: 40, cost: 0 });
  out.push(await s.explainFor("ci-bot", "chat-main"));
  return out;
}

Deno.test("explain: Redis-backed counters give the same numbers as memory", async () => {
  const keyPrefix = `test:explain:${crypto.randomUUID()}:`;
  const redis = createRedisCounterStore({ url: REDIS_URL, keyPrefix, timeoutMs: 1_000, clock: () => T0 });
  const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    assert.equal(await redis.whenReady(5_000), true, "Redis at 127.0.0.1:6379 must be running (.ci/run)");
    const memory = await scenario(createMemoryCounterStore(() => T0));
    const shared = await scenario(redis);
    assert.deepEqual(shared, memory);
    // The numbers are the requests': not all zero, and explaining twice changed nothing.
    assert.deepEqual([limit(memory[0], "token.rpm").used, limit(memory[0], "token.concurrent").used], [2, 1]);
    assert.equal(memory[0].budget?.used, 71);
    assert.deepEqual(memory[1], memory[0]);
    assert.equal(memory[2].budget?.used, 0.0036);
    assert.equal(limit(memory[3], "token.concurrent").used, 0);
  } finally {
    await redis.close();
    await admin.connect();
    const keys = await admin.keys(`${keyPrefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    await admin.quit();
  }
});
