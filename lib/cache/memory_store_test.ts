/**
 * The memory cache store: LRU order, both bounds, TTLs and fill locks, on an injected clock so that expiry
 * is exact and no test waits.
 */
import assert from "node:assert/strict";
import { createMemoryCacheStore, type MemoryCacheStoreOptions } from "./memory_store.ts";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

function store(options: Partial<MemoryCacheStoreOptions> = {}) {
  const c = clock();
  const s = createMemoryCacheStore({
    maxEntries: 100,
    maxBytes: 1_000_000,
    maxEntryBytes: 100_000,
    now: c.now,
    ...options,
  });
  return { s, c };
}

const HOUR = 3_600_000;

Deno.test("memory cache: set then get; a miss is undefined; kind and ping", async () => {
  const { s } = store();
  assert.equal(s.kind, "memory");
  await s.ping();
  assert.equal(await s.get("k"), undefined);
  await s.set("k", "v1", HOUR);
  assert.equal(await s.get("k"), "v1");
  await s.set("k", "v2", HOUR);
  assert.equal(await s.get("k"), "v2");
  assert.deepEqual(s.size(), { entries: 1, bytes: 3 }, "one entry: 2 value bytes plus 1 key byte");
});

Deno.test("memory cache: the least recently used entry goes first past maxEntries", async () => {
  const { s } = store({ maxEntries: 3 });
  await s.set("a", "1", HOUR);
  await s.set("b", "2", HOUR);
  await s.set("c", "3", HOUR);
  assert.equal(await s.get("a"), "1", "a is now the most recently used");
  await s.set("d", "4", HOUR);
  assert.equal(await s.get("b"), undefined, "b was the least recently used");
  assert.equal(await s.get("a"), "1");
  assert.equal(await s.get("c"), "3");
  assert.equal(await s.get("d"), "4");
  assert.equal(s.size()?.entries, 3);
  // re-setting an entry makes it recent too
  await s.set("a", "1", HOUR);
  await s.set("e", "5", HOUR);
  assert.equal(await s.get("c"), undefined);
  assert.equal(await s.get("a"), "1");
});

Deno.test("memory cache: bytes count UTF-8 values plus keys and bound the store", async () => {
  const { s } = store({ maxBytes: 30 });
  await s.set("k1", "€€€", HOUR); // 9 + 2
  assert.deepEqual(s.size(), { entries: 1, bytes: 11 });
  await s.set("k2", "0123456789", HOUR); // 10 + 2
  assert.deepEqual(s.size(), { entries: 2, bytes: 23 });
  await s.get("k1");
  await s.set("k3", "abcde", HOUR); // 5 + 2: 30 in all, at the bound
  assert.deepEqual(s.size(), { entries: 3, bytes: 30 });
  await s.set("k4", "x", HOUR); // 1 + 2: k2 (least recently used) goes
  assert.deepEqual(s.size(), { entries: 3, bytes: 21 });
  assert.equal(await s.get("k2"), undefined);
  assert.equal(await s.get("k1"), "€€€");
  // a replaced value's bytes are given back
  await s.set("k1", "a", HOUR);
  assert.deepEqual(s.size(), { entries: 3, bytes: 13 });
  // several entries go for one large one
  await s.set("big", "y".repeat(25), HOUR); // 28
  assert.deepEqual(s.size(), { entries: 1, bytes: 28 });
  assert.equal(await s.get("big"), "y".repeat(25));
});

Deno.test("memory cache: a value over maxEntryBytes (or over maxBytes) is not stored", async () => {
  const { s } = store({ maxEntryBytes: 6, maxBytes: 20 });
  await s.set("keep", "kept", HOUR);
  await s.set("k", "€€€", HOUR); // 9 bytes > 6
  assert.equal(await s.get("k"), undefined);
  await s.set("k", "123456", HOUR); // exactly 6: stored
  assert.equal(await s.get("k"), "123456");
  await s.set("k", "1234567", HOUR); // too large: the stored one stays
  assert.equal(await s.get("k"), "123456");
  const tiny = store({ maxEntryBytes: 100, maxBytes: 10 });
  await tiny.s.set("kk", "123456789", HOUR); // 11 bytes > maxBytes: would evict everything and still not fit
  assert.deepEqual(tiny.s.size(), { entries: 0, bytes: 0 });
  assert.equal(await s.get("keep"), "kept");
});

Deno.test("memory cache: an entry expires at its TTL and is dropped", async () => {
  const { s, c } = store();
  await s.set("short", "1", 1_000);
  await s.set("long", "2", 5_000);
  c.advance(999);
  assert.equal(await s.get("short"), "1");
  c.advance(1);
  assert.equal(await s.get("short"), undefined);
  assert.equal(s.size()?.entries, 1, "the expired entry was removed when met");
  assert.equal(await s.get("long"), "2");
  c.advance(4_000);
  assert.equal(await s.get("long"), undefined);
  assert.deepEqual(s.size(), { entries: 0, bytes: 0 });
  await s.set("zero", "z", 0);
  assert.equal(await s.get("zero"), undefined, "a TTL of zero stores nothing");
});

Deno.test("memory cache: expired entries are swept before live ones are evicted", async () => {
  const { s, c } = store({ maxEntries: 3 });
  await s.set("old", "1", HOUR);
  await s.set("brief", "2", 100);
  await s.set("live", "3", HOUR);
  c.advance(200);
  await s.set("new", "4", HOUR);
  assert.equal(await s.get("old"), "1", "the expired entry went, not the least recently used live one");
  assert.equal(await s.get("live"), "3");
  assert.equal(await s.get("new"), "4");
  assert.equal(s.size()?.entries, 3);
});

Deno.test("memory cache: a lock is exclusive, renewed and given back only by its holder", async () => {
  const { s } = store();
  assert.equal(await s.locked("k"), false);
  assert.equal(await s.lock("k", "a", 1_000), true);
  assert.equal(await s.locked("k"), true);
  assert.equal(await s.lock("k", "b", 1_000), false, "held by a");
  assert.equal(await s.lock("k", "a", 1_000), false, "not re-entrant");
  assert.equal(await s.lock("other", "b", 1_000), true, "locks are per key");
  assert.equal(await s.renew("k", "b", 1_000), false);
  assert.equal(await s.renew("k", "a", 1_000), true);
  await s.unlock("k", "b");
  assert.equal(await s.locked("k"), true, "b cannot give back a's lock");
  await s.unlock("k", "a");
  assert.equal(await s.locked("k"), false);
  assert.equal(await s.renew("k", "a", 1_000), false, "a no longer holds it");
  assert.equal(await s.lock("k", "b", 1_000), true);
});

Deno.test("memory cache: a lock expires, can then be taken by another, and the old holder cannot touch it", async () => {
  const { s, c } = store();
  assert.equal(await s.lock("k", "a", 1_000), true);
  c.advance(500);
  assert.equal(await s.renew("k", "a", 1_000), true, "now held until 1 500");
  c.advance(999);
  assert.equal(await s.locked("k"), true);
  assert.equal(await s.lock("k", "b", 1_000), false);
  c.advance(1);
  assert.equal(await s.locked("k"), false, "expired");
  assert.equal(await s.renew("k", "a", 1_000), false, "an expired lock cannot be renewed");
  assert.equal(await s.lock("k", "b", 1_000), true);
  await s.unlock("k", "a");
  assert.equal(await s.locked("k"), true, "a's unlock leaves b's lock alone");
  assert.equal(await s.renew("k", "a", 1_000), false);
  assert.equal(await s.lock("z", "a", 0), false, "a lock born expired is not taken");
});

Deno.test("memory cache: close empties the store", async () => {
  const { s } = store();
  await s.set("k", "v", HOUR);
  await s.lock("k", "a", HOUR);
  await s.close();
  assert.deepEqual(s.size(), { entries: 0, bytes: 0 });
  assert.equal(await s.get("k"), undefined);
  assert.equal(await s.locked("k"), false);
});
