/**
 * The Redis counter store against the in-memory one: the same sequences of operations on the same clock
 * give the same decisions and the same numbers. Runs against the Redis of the development and CI machines
 * (127.0.0.1:6379, started by .ci/run), under a key prefix of its own.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import type { BucketCheck, Check, CounterStore, ReserveResult } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import {
  createRedisCounterStore,
  type RedisCounterStore,
  RESERVATION_MARKER_TTL_MS,
} from "./redis_counter_store.ts";
import { backstop } from "../../tests/helpers/backstop.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
const FAR = Date.UTC(2100, 0, 1);

function clock(start = Date.UTC(2026, 10, 22, 12)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

function prefix(): string {
  return `test:${crypto.randomUUID()}:`;
}

async function withStores(
  fn: (
    stores: { memory: CounterStore; redis: RedisCounterStore; c: ReturnType<typeof clock> },
  ) => Promise<void>,
  keyPrefix = prefix(),
  start?: number,
  timeoutMs = 1_000,
) {
  const c = clock(start);
  const memory = createMemoryCounterStore(c.now);
  const redis = createRedisCounterStore({ url: REDIS_URL, keyPrefix, timeoutMs, clock: c.now });
  try {
    assert.equal(await redis.whenReady(5_000), true, "Redis at 127.0.0.1:6379 must be running (.ci/run)");
    await fn({ memory, redis, c });
  } finally {
    await redis.close();
  }
}

/** An answer without the Redis store's name for a reservation (the memory store names none). */
function unnamed<T>(value: T): T {
  if (typeof value !== "object" || value === null || !("reservation" in value)) return value;
  const { reservation: _, ...rest } = value as Record<string, unknown>;
  return rest as T;
}

/**
 * An answer without the memory store's numbers of the counters taken from (`CheckResult.generation`: Redis
 * forgets no counter, so it numbers none).
 */
function unnumbered<T>(value: T): T {
  if (typeof value !== "object" || value === null || !("results" in value)) return value;
  const { results, ...rest } = value as { results: readonly Record<string, unknown>[] };
  return { ...rest, results: results.map(({ generation: _, ...result }) => result) } as T;
}

/** Runs `op` on both stores and asserts they answer the same; returns the answer. */
async function same<T>(
  memory: CounterStore,
  redis: CounterStore,
  op: (s: CounterStore) => Promise<T>,
): Promise<T> {
  const a = unnumbered(await op(memory));
  const b = unnamed(await op(redis));
  assert.deepEqual(b, a);
  return a;
}

const bucket = (key: string, limit: number, amount = 1, windowMs = 60_000): BucketCheck => ({
  kind: "bucket",
  key,
  limit,
  windowMs,
  amount,
});

Deno.test("redis store: a bucket burst, refill, overdraft and refund decide as in memory", async () => {
  await withStores(async ({ memory, redis, c }) => {
    const reserve = (checks: Check[]) => same(memory, redis, (s) => s.reserve(checks));
    for (let i = 0; i < 20; i++) assert.equal((await reserve([bucket("token:t:rpm", 20)])).ok, true);
    const denied = await reserve([bucket("token:t:rpm", 20)]);
    assert.equal(denied.ok, false);
    assert.equal(denied.results[0].retryAfterMs, 3_000);
    c.advance(2_999);
    assert.equal((await reserve([bucket("token:t:rpm", 20)])).ok, false);
    c.advance(1);
    assert.equal((await reserve([bucket("token:t:rpm", 20)])).ok, true);
    // TPM: charge an estimate, then overdraw it and refund part
    const tpm = bucket("token:t:tpm", 1000, 700);
    assert.equal((await reserve([tpm])).ok, true);
    await same(memory, redis, (s) => s.adjust(tpm, 450).then(() => null));
    const low = await reserve([bucket("token:t:tpm", 1000, 10)]);
    assert.equal(low.ok, false);
    assert.equal(low.results[0].used, 1150);
    c.advance(7_777);
    await same(memory, redis, (s) => s.adjust(tpm, -333.5).then(() => null));
    await reserve([bucket("token:t:tpm", 1000, 0)]);
    c.advance(600_000);
    const full = await reserve([bucket("token:t:tpm", 1000, 0)]);
    assert.equal(full.results[0].remaining, 1000);
  });
});

Deno.test("redis store: all-or-nothing over buckets, concurrency and a budget reservation", async () => {
  await withStores(async ({ memory, redis, c }) => {
    const reserve = (checks: Check[]) => same(memory, redis, (s) => s.reserve(checks));
    const conc: Check = { kind: "concurrency", key: "token:t:concurrent", limit: 2 };
    const budget = (amount: number): Check => ({
      kind: "period",
      key: "token:t:budget:tokens",
      period: "2026-11-22",
      limit: 1000,
      amount,
      expiresAt: FAR,
    });
    assert.equal((await reserve([conc, bucket("token:t:rpm", 10), budget(400)])).ok, true);
    assert.equal((await reserve([conc, bucket("token:t:rpm", 10), budget(400)])).ok, true);
    // the third fails on concurrency and on the budget (800 + 400 > 1000): nothing is taken
    const denied: ReserveResult = await reserve([conc, bucket("token:t:rpm", 10), budget(400)]);
    assert.deepEqual(denied.results.map((r) => r.ok), [false, true, false]);
    await same(memory, redis, (s) => s.release("token:t:concurrent"));
    // 200 are left of the budget: a reservation of exactly 200 passes, then a zero-estimate read is refused
    assert.equal((await reserve([conc, bucket("token:t:rpm", 10), budget(200)])).ok, true);
    assert.equal((await reserve([budget(0)])).ok, false);
    // settling gives back what was reserved and not used
    await same(memory, redis, (s) => s.periodAdd("token:t:budget:tokens", "2026-11-22", -350, FAR));
    const after = await reserve([bucket("token:t:rpm", 10, 0), budget(0)]);
    assert.equal(after.results[0].remaining, 7);
    assert.equal(after.results[1].used, 650);
    c.advance(1);
    assert.equal(
      await same(memory, redis, (s) => s.periodRaise("token:t:budget:tokens", "2026-11-22", 700.25, FAR)),
      700.25,
    );
    assert.equal(
      await same(memory, redis, (s) => s.periodRaise("token:t:budget:tokens", "2026-11-22", 5, FAR)),
      700.25,
    );
    assert.equal(
      await same(memory, redis, (s) => s.periodGet("token:t:budget:tokens", "2026-11-22")),
      700.25,
    );
    assert.equal(await same(memory, redis, (s) => s.periodGet("token:t:budget:tokens", "2026-11-23")), 0);
  });
});

Deno.test("redis store: keys carry the prefix and one hash tag, and idle keys expire", async () => {
  const keyPrefix = prefix();
  const inspect = new Redis(REDIS_URL);
  try {
    await withStores(async ({ redis }) => {
      await redis.reserve([
        bucket("token:t:rpm", 10),
        { kind: "concurrency", key: "token:t:concurrent", limit: 3 },
        {
          kind: "period",
          key: "token:t:budget:cost",
          period: "2026-11",
          limit: 5,
          amount: 1,
          expiresAt: FAR,
        },
      ]);
      const keys = (await inspect.keys(`${keyPrefix}*`)).sort();
      assert.deepEqual(keys.filter((k) => !k.includes(":reservation:")), [
        `${keyPrefix}{limits}:token:t:budget:cost:2026-11`,
        `${keyPrefix}{limits}:token:t:concurrent:slots`,
        `${keyPrefix}{limits}:token:t:rpm`,
      ]);
      // The reservation's marker, short-lived, under the same tag (its undo spans the same keys).
      const [marker] = keys.filter((k) => k.includes(":reservation:"));
      assert.match(
        marker,
        new RegExp(
          `^${keyPrefix.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\{limits\\}:reservation:[0-9a-f]{24}$`,
        ),
      );
      const markerTtl = await inspect.pttl(marker);
      assert.ok(markerTtl > 0 && markerTtl <= RESERVATION_MARKER_TTL_MS, `${markerTtl} ms`);
      const rpmTtl = await inspect.pttl(`${keyPrefix}{limits}:token:t:rpm`);
      assert.ok(rpmTtl > 0 && rpmTtl <= 6_000, `a bucket expires when full again (${rpmTtl} ms)`);
      assert.ok(await inspect.pttl(`${keyPrefix}{limits}:token:t:concurrent:slots`) > 0);
      assert.ok(await inspect.pttl(`${keyPrefix}{limits}:token:t:budget:cost:2026-11`) > 0);
      await redis.release("token:t:concurrent");
      assert.equal(await inspect.exists(`${keyPrefix}{limits}:token:t:concurrent:slots`), 0);
      await redis.adjust(bucket("token:t:rpm", 10), -1);
      assert.equal(await inspect.exists(`${keyPrefix}{limits}:token:t:rpm`), 0, "a full bucket has no key");
    }, keyPrefix);
  } finally {
    inspect.disconnect();
  }
});

/**
 * A period counter lives until its expiry as the store's clock tells it, like the in-memory store's, on every
 * path that writes one (reserve, periodAdd, periodRaise, settle). Clocks a century before and after today make
 * an expiry judged by the real date fail either way: gone at once, or kept for a century.
 */
Deno.test("redis store: a period counter expires by the store's clock, not by the real date", async () => {
  const HOUR = 3_600_000;
  const inspect = new Redis(REDIS_URL);
  try {
    for (const start of [Date.UTC(1926, 10, 24, 12), Date.UTC(2126, 10, 24, 12)]) {
      const keyPrefix = prefix();
      await withStores(
        async ({ memory, redis }) => {
          const expiresAt = start + 2 * HOUR;
          const check: Check = {
            kind: "period",
            key: "p:reserve",
            period: "d",
            limit: 100,
            amount: 7,
            expiresAt,
          };
          const settled = { key: "p:settle", period: "d", amount: 5, expiresAt };
          for (const s of [memory, redis]) {
            assert.equal((await s.reserve([check])).ok, true);
            await s.periodAdd("p:add", "d", 3, expiresAt);
            await s.periodRaise("p:raise", "d", 4, expiresAt);
          }
          await memory.periodAdd(settled.key, settled.period, settled.amount, settled.expiresAt);
          await redis.settle!({ release: [], adjust: [], periods: [settled] });
          const written = [["p:reserve", 7], ["p:add", 3], ["p:raise", 4], ["p:settle", 5]] as const;
          for (const [key, value] of written) {
            const label = `${key} at ${new Date(start).toISOString()}`;
            assert.equal(await same(memory, redis, (s) => s.periodGet(key, "d")), value, label);
            const ttl = await inspect.pttl(`${keyPrefix}{limits}:${key}:d`);
            assert.ok(
              ttl > HOUR && ttl <= 2 * HOUR,
              `${label}: expires in 2 h of the store's clock (${ttl} ms)`,
            );
          }
        },
        keyPrefix,
        start,
      );
      const keys = await inspect.keys(`${keyPrefix}*`);
      if (keys.length > 0) await inspect.del(...keys);
    }
  } finally {
    inspect.disconnect();
  }
});

Deno.test("redis store: Redis's own clock refills, and a flushed script cache is reloaded (NOSCRIPT)", async () => {
  const redis = createRedisCounterStore({ url: REDIS_URL, keyPrefix: prefix(), timeoutMs: 1_000 });
  const admin = new Redis(REDIS_URL);
  try {
    assert.equal(await redis.whenReady(5_000), true);
    // 600 per minute: 10 per second
    for (let i = 0; i < 5; i++) assert.equal((await redis.reserve([bucket("k", 600, 120)])).ok, true);
    assert.equal((await redis.reserve([bucket("k", 600, 120)])).ok, false);
    await admin.script("FLUSH");
    await new Promise((r) => setTimeout(r, 1_300));
    const again = await redis.reserve([bucket("k", 600, 10)]);
    assert.equal(again.ok, true, "about 13 refilled in 1.3 s of Redis time");
  } finally {
    await redis.close();
    admin.disconnect();
  }
});

Deno.test("redis store: an unreachable Redis fails calls at once, never waits out the timeout", async () => {
  // The per-call timeout is ten minutes here: a call that waited for a connection (an offline queue) would be
  // held that long, so failing within the backstop is failing because Redis is away, not because time ran out.
  const redis = createRedisCounterStore({
    url: "redis://127.0.0.1:1",
    keyPrefix: prefix(),
    timeoutMs: 600_000,
  });
  try {
    const outcome = (call: Promise<unknown>) => call.then(() => "answered", () => "failed");
    assert.equal(
      await backstop(outcome(redis.reserve([bucket("k", 1)])), "a reservation without Redis"),
      "failed",
    );
    assert.equal(await backstop(outcome(redis.release("k")), "a release without Redis"), "failed");
  } finally {
    await redis.close();
  }
});

Deno.test("redis store: settle in one script does what release, adjust and periodAdd do one by one", async () => {
  await withStores(async ({ memory, redis, c }) => {
    const conc: Check = { kind: "concurrency", key: "token:t:concurrent", limit: 3 };
    const tpm = bucket("token:t:tpm", 1000, 400);
    const budget: Check = {
      kind: "period",
      key: "token:t:budget:tokens",
      period: "2026-11-22",
      limit: 5000,
      amount: 400,
      expiresAt: FAR,
    };
    for (const s of [memory, redis]) {
      assert.equal((await s.reserve([conc, tpm, budget])).ok, true);
      assert.equal((await s.reserve([conc, tpm, budget])).ok, true);
    }
    c.advance(1_234);
    const period = { key: "token:t:budget:tokens", period: "2026-11-22", amount: -150.5, expiresAt: FAR };
    await memory.release("token:t:concurrent");
    await memory.adjust(tpm, -150.5);
    await memory.periodAdd(period.key, period.period, period.amount, period.expiresAt);
    await redis.settle!({
      release: ["token:t:concurrent"],
      adjust: [{ bucket: tpm, delta: -150.5 }],
      periods: [period],
    });
    const read = (s: CounterStore) => s.reserve([conc, { ...tpm, amount: 0 }, { ...budget, amount: 0 }]);
    await same(memory, redis, read);
    c.advance(100);
    await same(memory, redis, read);
  });
});

Deno.test("redis store: a refund never takes a period counter below zero (one recreated since its reservation)", async () => {
  await withStores(async ({ memory, redis }) => {
    // An end user forgotten while a request of theirs ran: their counter starts afresh, then the request's
    // settlement gives back more than the fresh counter holds.
    assert.equal(await same(memory, redis, (s) => s.periodAdd("end_user:t:a:budget", "d", 95, FAR)), 95);
    assert.equal(await same(memory, redis, (s) => s.periodAdd("end_user:t:a:budget", "d", -905, FAR)), 0);
    await redis.settle!({
      release: [],
      adjust: [],
      periods: [{ key: "end_user:t:a:budget", period: "d", amount: -50, expiresAt: FAR }],
    });
    assert.equal(await redis.periodGet("end_user:t:a:budget", "d"), 0);
  });
});

Deno.test("redis store: a settlement of 50,000 counters is one script, not an argument list too long to call", async () => {
  await withStores(
    async ({ redis }) => {
      const periods = Array.from({ length: 50_000 }, (_, i) => ({
        key: `end_user:t:u${i}:budget:tokens`,
        period: "d",
        amount: 7,
        expiresAt: FAR,
      }));
      // Three arguments a counter: spread into one call, past the engine's limit on a call's arguments.
      await redis.settle!({ release: [], adjust: [], periods, reservation: "a".repeat(24) });
      for (const i of [0, 49_999]) {
        assert.equal(await redis.periodGet(`end_user:t:u${i}:budget:tokens`, "d"), 7);
      }
      // Redis runs a script of 50,000 counters in well under a second alone, not always within 1 s on a loaded CI
      // machine: the bound here is the argument list, not Redis's speed.
    },
    prefix(),
    undefined,
    30_000,
  );
});
