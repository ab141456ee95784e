import assert from "node:assert/strict";
import { type BucketCheck, bucketLevel, msUntilAvailable, msUntilFull } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";

function clock(start = Date.UTC(2026, 10, 22, 12)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

const rpm = (limit: number, amount = 1, key = "token:t:rpm"): BucketCheck => ({
  kind: "bucket",
  key,
  limit,
  windowMs: 60_000,
  amount,
});

Deno.test("bucket math: continuous refill capped at the limit, absent is full", () => {
  assert.equal(bucketLevel(undefined, 10, 60_000, 0), 10);
  assert.equal(bucketLevel({ level: 0, at: 0 }, 10, 60_000, 30_000), 5);
  assert.equal(bucketLevel({ level: 0, at: 0 }, 10, 60_000, 600_000), 10);
  assert.equal(bucketLevel({ level: -10, at: 0 }, 10, 60_000, 60_000), 0);
  // a clock that goes backwards does not drain the bucket
  assert.equal(bucketLevel({ level: 4, at: 1000 }, 10, 60_000, 0), 4);
  assert.equal(msUntilFull(10, 10, 60_000), 0);
  assert.equal(msUntilFull(0, 10, 60_000), 60_000);
  assert.equal(msUntilFull(-5, 10, 60_000), 90_000);
  assert.equal(msUntilAvailable(0.5, 1, 10, 60_000), 3_000);
  assert.equal(msUntilAvailable(3, 1, 10, 60_000), 0);
});

Deno.test("bucket: a burst of exactly the limit, then one every window/limit", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  for (let i = 0; i < 20; i++) assert.equal((await store.reserve([rpm(20)])).ok, true);
  const denied = await store.reserve([rpm(20)]);
  assert.equal(denied.ok, false);
  assert.deepEqual(denied.results[0], {
    ok: false,
    used: 20,
    remaining: 0,
    resetMs: 60_000,
    retryAfterMs: 3_000,
  });
  c.advance(2_999);
  assert.equal((await store.reserve([rpm(20)])).ok, false);
  c.advance(1);
  const one = await store.reserve([rpm(20)]);
  assert.equal(one.ok, true);
  assert.equal(one.results[0].remaining, 0);
  assert.equal((await store.reserve([rpm(20)])).ok, false);
  c.advance(60_000);
  const full = await store.reserve([rpm(20)]);
  // A bucket made afresh (the one before refilled whole and went): numbered anew.
  const { generation, ...result } = full.results[0];
  assert.deepEqual(result, { ok: true, used: 1, remaining: 19, resetMs: 3_000, retryAfterMs: 0 });
  assert.notEqual(generation, one.results[0].generation);
});

Deno.test("reserve is all or nothing", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const tpm = rpm(100, 60, "token:t:tpm");
  assert.equal((await store.reserve([rpm(10), tpm])).ok, true);
  const denied = await store.reserve([rpm(10), tpm, {
    kind: "concurrency",
    key: "token:t:concurrent",
    limit: 5,
  }]);
  assert.equal(denied.ok, false);
  assert.deepEqual(denied.results.map((r) => r.ok), [true, false, true]);
  // nothing was taken by the denied reservation
  const after = await store.reserve([rpm(10, 0), rpm(100, 0, "token:t:tpm")]);
  assert.equal(after.results[0].remaining, 9);
  assert.equal(after.results[1].remaining, 40);
  assert.equal(store.size(), 2);
});

Deno.test("a zero amount reads the bucket and always passes, even overdrawn", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  await store.adjust(rpm(100), 150);
  const read = await store.reserve([rpm(100, 0)]);
  assert.equal(read.ok, true);
  assert.equal(read.results[0].remaining, 0);
  assert.equal(read.results[0].used, 150);
  assert.equal(read.results[0].resetMs, 90_000);
});

Deno.test("adjust: refunds never overfill; extra charges overdraw and delay the next take", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const tpm = rpm(1000, 400);
  await store.reserve([tpm]);
  await store.adjust(tpm, -1000);
  assert.equal((await store.reserve([rpm(1000, 0)])).results[0].remaining, 1000);
  await store.adjust(tpm, 1500); // level -500
  const denied = await store.reserve([rpm(1000, 100)]);
  assert.equal(denied.ok, false);
  assert.equal(denied.results[0].retryAfterMs, 36_000); // 600 tokens at 1000 per minute
  c.advance(36_000);
  assert.equal((await store.reserve([rpm(1000, 100)])).ok, true);
});

Deno.test("concurrency: limit slots, released ones are reusable, counters at zero are dropped", async () => {
  const store = createMemoryCounterStore(clock().now);
  const slot = { kind: "concurrency", key: "alias:a:concurrent", limit: 2 } as const;
  assert.equal((await store.reserve([slot])).results[0].remaining, 1);
  assert.equal((await store.reserve([slot])).ok, true);
  const denied = await store.reserve([slot]);
  assert.deepEqual(denied.results[0], { ok: false, used: 2, remaining: 0, resetMs: 0, retryAfterMs: 0 });
  await store.release(slot.key);
  assert.equal((await store.reserve([slot])).ok, true);
  await store.release(slot.key);
  await store.release(slot.key);
  assert.equal(store.size(), 0, "the last slot given back drops the counter");
  await store.release(slot.key); // an extra release does not go negative
  assert.equal(store.size(), 0);
  assert.equal((await store.reserve([slot])).results[0].used, 1);
});

Deno.test("period counters: add, get, raise, check, and expiry", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now, { sweepIntervalMs: 0 });
  const end = c.now() + 10_000;
  assert.equal(await store.periodGet("token:t:budget:tokens", "2026-11-22"), 0);
  assert.equal(await store.periodAdd("token:t:budget:tokens", "2026-11-22", 300, end), 300);
  assert.equal(await store.periodAdd("token:t:budget:tokens", "2026-11-22", 200.5, end), 500.5);
  assert.equal(await store.periodGet("token:t:budget:tokens", "2026-11-23"), 0);
  assert.equal(await store.periodRaise("token:t:budget:tokens", "2026-11-22", 100, end), 500.5);
  assert.equal(await store.periodRaise("token:t:budget:tokens", "2026-11-22", 700, end), 700);
  const check = { kind: "period", key: "token:t:budget:tokens", period: "2026-11-22", limit: 700 } as const;
  const denied = await store.reserve([check]);
  assert.deepEqual(denied.results[0], { ok: false, used: 700, remaining: 0, resetMs: 0, retryAfterMs: 0 });
  assert.equal((await store.reserve([{ ...check, limit: 701 }])).ok, true);
  c.advance(10_000);
  assert.equal(await store.periodGet("token:t:budget:tokens", "2026-11-22"), 0);
  assert.equal(store.size(), 0);
});

Deno.test("idle keys expire: buckets are dropped once full again", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now, { sweepIntervalMs: 1_000 });
  for (let i = 0; i < 100; i++) await store.reserve([rpm(10, 1, `token:t${i}:rpm`)]);
  assert.equal(store.size(), 100);
  c.advance(5_999);
  await store.periodGet("x", "y");
  assert.equal(store.size(), 100);
  c.advance(500); // expired, but swept at most once per second
  await store.periodGet("x", "y");
  assert.equal(store.size(), 100);
  c.advance(500);
  await store.periodGet("x", "y");
  assert.equal(store.size(), 0);
  // a bucket refilled to the limit by a refund is not stored at all
  await store.reserve([rpm(10, 3)]);
  await store.adjust(rpm(10), -3);
  assert.equal(store.size(), 0);
});

Deno.test("generations: a refund goes back only to the counter its reservation took from; spend beyond it counts", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const budget = {
    kind: "period",
    key: "end_user:t:u:budget:tokens",
    period: "2026-11-22",
    limit: 100,
  } as const;
  const tpm = rpm(100, 80, "end_user:t:u:tpm");
  const first = await store.reserve([tpm, { ...budget, amount: 80 }]);
  await store.forget([tpm, budget]); // the user forgotten under max_users, then back
  const back = await store.reserve([tpm, { ...budget, amount: 80 }]);
  assert.notEqual(back.results[1].generation, first.results[1].generation);
  const heldIn = (r: typeof first) => ({ key: budget.key, generation: r.results[1].generation });
  // The first request's refund is of counters gone: the returning request's reservations stay.
  await store.adjust({ ...tpm, generation: first.results[0].generation }, -80);
  await store.periodAdd(budget.key, budget.period, -80, Infinity, heldIn(first));
  assert.equal((await store.peek([tpm])).results[0].used, 80);
  assert.equal(await store.periodGet(budget.key, budget.period), 80);
  // What it used beyond its reservation is spend: counted on the counters the user has now.
  await store.adjust({ ...tpm, generation: first.results[0].generation }, 5);
  await store.periodAdd(budget.key, budget.period, 5, Infinity, heldIn(first));
  assert.equal((await store.peek([tpm])).results[0].used, 85);
  assert.equal(await store.periodGet(budget.key, budget.period), 85);
  // The returning request's own refund is given back.
  await store.adjust({ ...tpm, generation: back.results[0].generation }, -30);
  await store.periodAdd(budget.key, budget.period, -30, Infinity, heldIn(back));
  assert.equal((await store.peek([tpm])).results[0].used, 55);
  assert.equal(await store.periodGet(budget.key, budget.period), 55);
  // Set to what a hand-over left owed, a counter stays the one its reservations were taken on.
  store.periodSet(budget.key, budget.period, 0, Infinity);
  await store.periodAdd(budget.key, budget.period, 7, Infinity, heldIn(back));
  assert.equal(await store.periodGet(budget.key, budget.period), 7);
});
