/**
 * The Redis cache store against the Redis of the development and CI machines (127.0.0.1:6379, started by
 * .ci/run), each test under a key prefix of its own that it deletes at the end. A missing Redis fails these
 * tests; it never skips them.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { createRedisCacheStore, type RedisCacheStore } from "./redis_store.ts";
import { CacheStoreRefusal } from "./types.ts";
import { backstop } from "../../tests/helpers/backstop.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
const HOUR = 3_600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` with two stores (two "replicas") on one fresh prefix, and a plain client to inspect keys. */
async function withStores(
  fn: (ctx: { a: RedisCacheStore; b: RedisCacheStore; inspect: Redis; keyPrefix: string }) => Promise<void>,
  maxEntryBytes = 1_000,
) {
  const keyPrefix = `test-cache-${crypto.randomUUID()}:`;
  const options = { url: REDIS_URL, keyPrefix, timeoutMs: 1_000, maxEntryBytes };
  const a = createRedisCacheStore(options);
  const b = createRedisCacheStore(options);
  const inspect = new Redis(REDIS_URL, { lazyConnect: true });
  try {
    await inspect.connect();
    assert.equal(await a.whenReady(5_000), true, "Redis at 127.0.0.1:6379 must be running (.ci/run)");
    assert.equal(await b.whenReady(5_000), true);
    await fn({ a, b, inspect, keyPrefix });
  } finally {
    try {
      let cursor = "0";
      do {
        const [next, keys] = await inspect.scan(cursor, "MATCH", `${keyPrefix}*`, "COUNT", 1_000);
        if (keys.length > 0) await inspect.del(...keys);
        cursor = next;
      } while (cursor !== "0");
    } finally {
      await a.close();
      await b.close();
      inspect.disconnect();
    }
  }
}

Deno.test("redis cache: set then get across replicas, under the prefixed key, with its TTL", async () => {
  await withStores(async ({ a, b, inspect, keyPrefix }) => {
    assert.equal(a.kind, "redis");
    assert.equal(a.size(), undefined);
    await a.ping();
    assert.equal(await a.get("k"), undefined);
    await a.set("k", "väl€", HOUR);
    assert.equal(await b.get("k"), "väl€", "another replica sees it");
    assert.equal(await inspect.get(`${keyPrefix}cache:k`), "väl€");
    const ttl = await inspect.pttl(`${keyPrefix}cache:k`);
    assert.ok(ttl > HOUR - 10_000 && ttl <= HOUR, `PX set (${ttl} ms)`);
    await b.set("k", "new", 60_000);
    assert.equal(await a.get("k"), "new");
  });
});

Deno.test("redis cache: an entry expires at its TTL", async () => {
  await withStores(async ({ a }) => {
    await a.set("short", "v", 150);
    assert.equal(await a.get("short"), "v");
    await sleep(300);
    assert.equal(await a.get("short"), undefined);
    await a.set("zero", "v", 0);
    assert.equal(await a.get("zero"), undefined, "a TTL of zero stores nothing");
  });
});

Deno.test("redis cache: a value over maxEntryBytes (UTF-8) is not stored", async () => {
  await withStores(async ({ a, inspect, keyPrefix }) => {
    await a.set("fits", "x".repeat(9), HOUR);
    assert.equal(await a.get("fits"), "x".repeat(9));
    await a.set("over", "€€€€", HOUR); // 4 characters, 12 bytes
    assert.equal(await a.get("over"), undefined);
    assert.equal(await inspect.exists(`${keyPrefix}cache:over`), 0);
  }, 10);
});

Deno.test("redis cache: a lock is exclusive between replicas; renew and unlock only by its holder", async () => {
  await withStores(async ({ a, b, inspect, keyPrefix }) => {
    const lockKey = `${keyPrefix}cache-lock:k`;
    assert.equal(await b.locked("k"), false);
    assert.equal(await a.lock("k", "holder-a", 10_000), true);
    assert.equal(await inspect.get(lockKey), "holder-a");
    assert.equal(await b.locked("k"), true);
    assert.equal(await b.lock("k", "holder-b", 10_000), false, "held by a");
    assert.equal(await a.lock("k", "holder-a", 10_000), false, "not re-entrant");

    assert.equal(await b.renew("k", "holder-b", HOUR), false);
    assert.ok((await inspect.pttl(lockKey)) <= 10_000, "b's renew left the TTL alone");
    assert.equal(await a.renew("k", "holder-a", HOUR), true);
    assert.ok((await inspect.pttl(lockKey)) > 10_000, "a's renew extended it");

    await b.unlock("k", "holder-b");
    assert.equal(await a.locked("k"), true, "b cannot give back a's lock");
    await a.unlock("k", "holder-a");
    assert.equal(await a.locked("k"), false);
    assert.equal(await a.renew("k", "holder-a", 10_000), false, "a no longer holds it");
    assert.equal(await b.lock("k", "holder-b", 10_000), true);
    assert.equal(await inspect.exists(`${keyPrefix}cache:k`), 0, "locks and entries are apart");
  });
});

Deno.test("redis cache: a lock expires by itself, and its old holder cannot touch the next one", async () => {
  await withStores(async ({ a, b }) => {
    assert.equal(await a.lock("k", "holder-a", 150), true);
    await sleep(300);
    assert.equal(await b.locked("k"), false);
    assert.equal(await a.renew("k", "holder-a", 10_000), false, "an expired lock cannot be renewed");
    assert.equal(await b.lock("k", "holder-b", 10_000), true);
    await a.unlock("k", "holder-a");
    assert.equal(await b.locked("k"), true, "a's late unlock leaves b's lock alone");
    assert.equal(await a.renew("k", "holder-a", 10_000), false);
  });
});

Deno.test("redis cache: an unreachable Redis fails calls at once, never waits out the timeout", async () => {
  // The per-call timeout is ten minutes here: a call that waited for a connection (an offline queue) would be
  // held that long, so failing within the backstop is failing because Redis is away, not because time ran out.
  const store = createRedisCacheStore({
    url: "redis://127.0.0.1:1",
    keyPrefix: `test-cache-${crypto.randomUUID()}:`,
    timeoutMs: 600_000,
    maxEntryBytes: 1_000,
  });
  const outcome = (call: Promise<unknown>) =>
    backstop(call.then(() => "answered", () => "failed"), "a call without Redis");
  try {
    assert.equal(await outcome(store.get("k")), "failed");
    assert.equal(await outcome(store.set("k", "v", HOUR)), "failed");
    assert.equal(await outcome(store.lock("k", "h", HOUR)), "failed");
    assert.equal(await outcome(store.ping()), "failed");
  } finally {
    await store.close();
  }
});

Deno.test("redis cache: a call Redis answers with an error reply is a refusal, not a store that is down", async () => {
  await withStores(async ({ a, inspect, keyPrefix }) => {
    // A key of another type makes Redis answer GET with its WRONGTYPE error reply: the server answered.
    await inspect.hset(`${keyPrefix}cache:hash`, "f", "v");
    await assert.rejects(a.get("hash"), (err: unknown) => {
      assert.ok(err instanceof CacheStoreRefusal, `a refusal: ${err}`);
      assert.match(err.message, /WRONGTYPE/);
      return true;
    });
    await a.set("plain", "v", HOUR);
    assert.equal(await a.get("plain"), "v", "the store goes on answering");
  });
});
