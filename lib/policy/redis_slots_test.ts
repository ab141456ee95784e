/**
 * Concurrency slots in Redis come back: a settlement Redis missed for a moment is sent again (and counts
 * once however often it is sent), and a slot never given back at all (its replica died) expires an hour
 * after it was taken even while the limit stays busy. Runs against the Redis of the development and CI
 * machines (127.0.0.1:6379, started by .ci/run), under key prefixes of its own, removed afterwards; the
 * blip is a proxy of the test's own in front of it.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { startTcpProxy } from "../../tests/helpers/tcp_proxy.ts";
import type { BucketCheck, Check, ConcurrencyCheck } from "./counter_store.ts";
import { createPolicyEngine, PolicyDenied } from "./engine.ts";
import { model, token } from "./engine_test_helpers.ts";
import {
  CONCURRENCY_TTL_MS,
  createRedisCounterStore,
  type RedisCounterStore,
} from "./redis_counter_store.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { Admission, PolicyRequest } from "./types.ts";

const REDIS_PORT = 6379;
const REDIS_URL = `redis://127.0.0.1:${REDIS_PORT}`;

function clock(start = Date.UTC(2026, 10, 22, 12)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

/** A key prefix of the test's own; `clean` removes every key under it. */
function keySpace() {
  const keyPrefix = `test:slots:${crypto.randomUUID()}:`;
  return {
    keyPrefix,
    async clean() {
      const admin = new Redis(REDIS_URL);
      try {
        const keys = await admin.keys(`${keyPrefix}*`);
        if (keys.length > 0) await admin.del(...keys);
      } finally {
        admin.disconnect();
      }
    },
  };
}

async function ready(store: RedisCounterStore): Promise<void> {
  assert.equal(await store.whenReady(5_000), true, `Redis at ${REDIS_URL} must be running (.ci/run)`);
}

const slot = (limit: number): ConcurrencyCheck => ({ kind: "concurrency", key: "token:t:concurrent", limit });

Deno.test("redis slots: a request that ends while Redis is away gives its slot back once Redis answers", async () => {
  const space = keySpace();
  const proxy = startTcpProxy(REDIS_PORT);
  const shared = createRedisCounterStore({
    url: `redis://127.0.0.1:${proxy.port}`,
    keyPrefix: space.keyPrefix,
    timeoutMs: 200,
  });
  // As served: the engine over the fail-open/closed wrapper over Redis.
  const counters = createResilientCounterStore(shared, {
    onFailure: "fail_closed",
    expectedReplicas: 1,
    probeIntervalMs: 50,
  });
  const errors: unknown[] = [];
  const engine = createPolicyEngine(counters, { onError: (err) => errors.push(err) });
  const req: PolicyRequest = {
    identity: token({ limits: { concurrent: 1 } }),
    endpoint: "chat",
    model: model(),
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }] },
    estimatedTokens: 1,
  };
  try {
    await ready(shared);
    const running = await engine.admit(req);
    await assert.rejects(engine.admit(req), PolicyDenied, "the one slot is taken");
    proxy.down(); // Redis away (a network blip, a failover) while the request runs…
    await running.settle({ tokens: 5, cost: 0 }); // …and it ends meanwhile
    assert.equal(errors.length, 1, "the failed settlement is logged");
    proxy.up();
    // Nothing runs any more: once Redis answers, the token is admitted again (not after an hour).
    const deadline = Date.now() + 10_000;
    let next: Admission | undefined;
    while (next === undefined) {
      try {
        next = await engine.admit(req);
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`still refused 10 s after Redis came back: ${err}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await next.settle({ tokens: 5, cost: 0 });
  } finally {
    await shared.close();
    await proxy.close();
    await space.clean();
  }
});

Deno.test("redis slots: a settlement sent twice (its first reply lost) counts once", async () => {
  const space = keySpace();
  const c = clock();
  const store = createRedisCounterStore({
    url: REDIS_URL,
    keyPrefix: space.keyPrefix,
    timeoutMs: 1_000,
    clock: c.now,
  });
  const tpm: BucketCheck = {
    kind: "bucket",
    key: "token:t:tpm",
    limit: 1_000,
    windowMs: 60_000,
    amount: 400,
  };
  try {
    await ready(store);
    const a = await store.reserve([slot(3), tpm]);
    const b = await store.reserve([slot(3), tpm]);
    assert.equal(a.ok && b.ok, true);
    const settleA = {
      release: [slot(3).key],
      adjust: [{ bucket: tpm, delta: -300 }],
      periods: [],
      reservation: a.reservation,
    };
    await store.settle!(settleA);
    await store.settle!(settleA);
    const [slots, bucket] = (await store.peek([slot(3), { ...tpm, amount: 0 }])).results;
    assert.equal(slots.used, 1, "b still holds its slot");
    assert.equal(bucket.used, 500, "400 + 400 charged, 300 given back once");
  } finally {
    await store.close();
    await space.clean();
  }
});

Deno.test("redis slots: a slot never given back comes back an hour after its take, however busy the limit stays", async () => {
  const space = keySpace();
  const c = clock();
  const store = createRedisCounterStore({
    url: REDIS_URL,
    keyPrefix: space.keyPrefix,
    timeoutMs: 1_000,
    clock: c.now,
  });
  const limit: Check[] = [slot(2)];
  try {
    await ready(store);
    // A replica takes a slot and dies: nothing will ever give it back.
    assert.equal((await store.reserve(limit)).ok, true);
    // The fleet keeps using the limit, one request a minute, for the rest of the hour.
    for (let minute = 1; minute < CONCURRENCY_TTL_MS / 60_000; minute++) {
      c.advance(60_000);
      const one = await store.reserve(limit);
      assert.equal(one.ok, true);
      assert.equal(one.results[0].used, 2, `minute ${minute}: the dead replica's slot still counts`);
      await store.settle!({ release: [slot(2).key], adjust: [], periods: [], reservation: one.reservation });
    }
    c.advance(60_000);
    // An hour after it was taken, both slots are free again.
    const first = await store.reserve(limit);
    const second = await store.reserve(limit);
    assert.deepEqual([first.ok, second.ok], [true, true]);
  } finally {
    await store.close();
    await space.clean();
  }
});
