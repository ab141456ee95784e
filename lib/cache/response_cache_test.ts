/**
 * The response cache's lookups and fills over the memory store: hits, `max-age`, `no-cache`, `no-store`,
 * single-flight within a replica and across replicas (two caches over one store), a failing store, and the
 * parsing of stored entries. The clock is injected where a test measures age; waits that a test bounds use
 * the real clock with small values.
 */
import assert from "node:assert/strict";
import type { CachedAnswer, CacheStore } from "./types.ts";
import type { CacheControl } from "./control.ts";
import { createMemoryCacheStore } from "./memory_store.ts";
import {
  type CacheEvents,
  createResponseCache,
  type Lookup,
  parseEntry,
  type ResponseCache,
  type ResponseCacheOptions,
} from "./response_cache.ts";

const TTL = 3_600_000;
const ANY: CacheControl = { read: true, write: true, maxAgeMs: null };
const NO_CACHE: CacheControl = { read: false, write: true, maxAgeMs: null };
const NO_STORE: CacheControl = { read: false, write: false, maxAgeMs: null };

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

function answer(text: string, storedAt: number): CachedAnswer {
  return {
    v: 1,
    completion: {
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    },
    storedAt,
    provider: "p",
    model: "m",
  };
}

/** A memory store shared as Redis is (its locks taken), so two caches over it act as two replicas. */
const memory = (now?: () => number) =>
  createMemoryCacheStore({ maxEntries: 100, maxBytes: 1_000_000, maxEntryBytes: 100_000, now, shared: true });

/** Counts each store call by method name. */
function counting(store: CacheStore): { store: CacheStore; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const count = (name: string) => calls.set(name, (calls.get(name) ?? 0) + 1);
  return {
    calls,
    store: {
      kind: store.kind,
      shared: store.shared,
      get: (key) => (count("get"), store.get(key)),
      set: (key, value, ttl) => (count("set"), store.set(key, value, ttl)),
      lock: (key, holder, ttl) => (count("lock"), store.lock(key, holder, ttl)),
      renew: (key, holder, ttl) => (count("renew"), store.renew(key, holder, ttl)),
      unlock: (key, holder) => (count("unlock"), store.unlock(key, holder)),
      locked: (key) => (count("locked"), store.locked(key)),
      size: () => store.size(),
      ping: () => (count("ping"), store.ping()),
      close: () => store.close(),
    },
  };
}

/** A store that rejects every call while `down.value` is true, and delegates to a memory store otherwise. */
function flaky(down: { value: boolean }, only?: ReadonlySet<string>): CacheStore {
  const inner = memory();
  const fail = (name: string) => down.value && (only === undefined || only.has(name));
  const wrap = <T>(name: string, op: () => Promise<T>): Promise<T> =>
    fail(name) ? Promise.reject(new Error(`store down (${name})`)) : op();
  return {
    kind: "redis",
    shared: true,
    get: (key) => wrap("get", () => inner.get(key)),
    set: (key, value, ttl) => wrap("set", () => inner.set(key, value, ttl)),
    lock: (key, holder, ttl) => wrap("lock", () => inner.lock(key, holder, ttl)),
    renew: (key, holder, ttl) => wrap("renew", () => inner.renew(key, holder, ttl)),
    unlock: (key, holder) => wrap("unlock", () => inner.unlock(key, holder)),
    locked: (key) => wrap("locked", () => inner.locked(key)),
    size: () => undefined,
    ping: () => wrap("ping", () => inner.ping()),
    close: () => inner.close(),
  };
}

function events() {
  const failed: unknown[] = [];
  let oks = 0;
  const sink: CacheEvents = { storeFailed: (err) => failed.push(err), storeOk: () => oks++ };
  return { sink, failed, oks: () => oks };
}

function cache(overrides: Partial<ResponseCacheOptions> = {}): ResponseCache {
  return createResponseCache({ store: memory(overrides.now), lockWaitMs: 30_000, ...overrides });
}

const signal = () => new AbortController().signal;

/** Lets pending promise callbacks (the fill's write and unlock) run. */
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function miss(lookup: Lookup) {
  assert.equal(lookup.kind, "miss");
  return (lookup as Extract<Lookup, { kind: "miss" }>).fill;
}

function hit(lookup: Lookup): CachedAnswer {
  assert.equal(lookup.kind, "hit");
  return (lookup as Extract<Lookup, { kind: "hit" }>).answer;
}

/** Whether `promise` is still pending after the current callbacks have run. */
async function pending(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => done = true, () => done = true);
  await settle();
  return !done;
}

Deno.test("response cache: a written fill is a hit for the next lookup", async () => {
  const c = clock();
  const rc = cache({ now: c.now });
  try {
    const fill = miss(await rc.lookup("k", TTL, ANY, signal()));
    assert.equal(fill.writes, true);
    fill.write(answer("four", c.now()));
    await settle();
    const found = hit(await rc.lookup("k", TTL, ANY, signal()));
    assert.deepEqual(found.completion?.choices[0].message, { role: "assistant", content: "four" });
    assert.deepEqual(await rc.read("k"), found);
    // another key is still a miss
    miss(await rc.lookup("other", TTL, ANY, signal())).abandon();
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: max-age rejects an older entry, and the miss's fill refreshes it", async () => {
  const c = clock();
  const rc = cache({ now: c.now });
  const maxAge: CacheControl = { read: true, write: true, maxAgeMs: 5_000 };
  try {
    miss(await rc.lookup("k", TTL, ANY, signal())).write(answer("old", c.now()));
    await settle();
    c.advance(5_000);
    assert.equal(hit(await rc.lookup("k", TTL, maxAge, signal())).storedAt, 1_000_000, "exactly max-age old");
    c.advance(1);
    const fill = miss(await rc.lookup("k", TTL, maxAge, signal()));
    assert.equal(hit(await rc.lookup("k", TTL, ANY, signal())).storedAt, 1_000_000, "without max-age: a hit");
    fill.write(answer("new", c.now()));
    await settle();
    assert.equal(hit(await rc.lookup("k", TTL, maxAge, signal())).storedAt, 1_005_001, "refreshed");
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: no-cache misses without reading, and its write replaces the entry", async () => {
  const c = clock();
  const { store, calls } = counting(memory(c.now));
  const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
  try {
    miss(await rc.lookup("k", TTL, ANY, signal())).write(answer("old", c.now()));
    await settle();
    calls.clear();
    c.advance(1_000);
    const fill = miss(await rc.lookup("k", TTL, NO_CACHE, signal()));
    assert.equal(fill.writes, true);
    assert.equal(calls.get("get"), undefined, "not read");
    assert.equal(calls.get("lock"), undefined, "no fill lock either");
    fill.write(answer("new", c.now()));
    await settle();
    assert.equal(calls.get("set"), 1);
    assert.equal((await rc.read("k"))?.storedAt, 1_001_000);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: no-store (read and write false) is a miss whose fill writes nothing", async () => {
  // The cache itself does not bypass on no-store: lookup gives a miss without reading the store, and its
  // fill does not write (`writes` is false). The runner (cachedRoute) is the one that turns no-store into a
  // bypass without calling lookup at all.
  const c = clock();
  const { store, calls } = counting(memory(c.now));
  const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
  try {
    miss(await rc.lookup("k", TTL, ANY, signal())).write(answer("old", c.now()));
    await settle();
    calls.clear();
    const fill = miss(await rc.lookup("k", TTL, NO_STORE, signal()));
    assert.equal(fill.writes, false);
    fill.write(answer("new", c.now() + 1));
    await settle();
    assert.equal(calls.size, 0, `no store call at all: ${[...calls.keys()]}`);
    assert.equal((await rc.read("k"))?.storedAt, 1_000_000, "the entry is untouched");
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a lookup of a key in flight waits and gets its answer as a hit", async () => {
  const c = clock();
  const { store, calls } = counting(memory(c.now));
  const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
  try {
    const first = miss(await rc.lookup("k", TTL, ANY, signal()));
    const second = rc.lookup("k", TTL, ANY, signal());
    const third = rc.lookup("k", TTL, ANY, signal());
    assert.ok(await pending(second), "the second waits");
    assert.ok(await pending(third), "so does a third");
    first.write(answer("shared", c.now()));
    assert.equal(hit(await second).storedAt, 1_000_000);
    assert.equal(hit(await third).storedAt, 1_000_000);
    assert.equal(calls.get("lock"), 1, "only the first took the fill lock");
    await settle();
    assert.equal(calls.get("unlock"), 1);
    assert.equal(await store.locked("k"), false, "the lock is given back");
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: an abandoned fill lets its waiters go on as misses", async () => {
  const c = clock();
  const rc = cache({ now: c.now });
  try {
    const first = miss(await rc.lookup("k", TTL, ANY, signal()));
    const second = rc.lookup("k", TTL, ANY, signal());
    assert.ok(await pending(second));
    first.abandon();
    const fill = miss(await second);
    assert.equal(fill.writes, true);
    // the waiter's own fill is written like any other
    fill.write(answer("second's", c.now()));
    await settle();
    assert.ok(await rc.read("k"));
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a waiter gives up after lockWaitMs and goes on as a miss", async () => {
  const rc = cache({ lockWaitMs: 50 });
  try {
    const first = miss(await rc.lookup("k", TTL, ANY, signal()));
    const second = miss(await rc.lookup("k", TTL, ANY, signal()));
    second.abandon();
    first.abandon();
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a waiter whose signal aborts stops waiting", async () => {
  const rc = cache({ lockWaitMs: 60_000 });
  try {
    const first = miss(await rc.lookup("k", TTL, ANY, signal()));
    const client = new AbortController();
    const second = rc.lookup("k", TTL, ANY, client.signal);
    assert.ok(await pending(second));
    client.abort();
    miss(await second).abandon();
    first.abandon();
  } finally {
    await rc.close();
  }
});

// A listener added to a signal that fired already never runs: such a waiter must not wait `lockWaitMs`.
Deno.test({
  name: "response cache: a waiter whose signal is already aborted does not wait",
  async fn() {
    const rc = cache({ lockWaitMs: 2_000 });
    try {
      const first = miss(await rc.lookup("k", TTL, ANY, signal()));
      const started = performance.now();
      miss(await rc.lookup("k", TTL, ANY, AbortSignal.abort())).abandon();
      assert.ok(performance.now() - started < 1_000, `waited ${performance.now() - started} ms`);
      first.abandon();
    } finally {
      await rc.close();
    }
  },
});

// Only the fill that leads the key's local flight may end it; a no-cache refresh or a waiter that gave up
// must leave it, or the next identical request skips the local wait for store round trips.
Deno.test({
  name: "response cache: a no-cache fill that ends does not drop another fill's flight",
  async fn() {
    const c = clock();
    const { store, calls } = counting(memory(c.now));
    const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
    try {
      const first = miss(await rc.lookup("k", TTL, ANY, signal()));
      miss(await rc.lookup("k", TTL, NO_CACHE, signal())).abandon();
      await settle();
      calls.clear();
      const third = rc.lookup("k", TTL, ANY, signal());
      assert.ok(await pending(third));
      first.write(answer("x", c.now()));
      hit(await third);
      assert.equal(calls.get("lock"), undefined, "the third waited on the first's flight, not on the store");
    } finally {
      await rc.close();
    }
  },
});

Deno.test("response cache: write and abandon act once", async () => {
  const c = clock();
  const { store, calls } = counting(memory(c.now));
  const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
  try {
    const fill = miss(await rc.lookup("a", TTL, ANY, signal()));
    fill.write(answer("first", 1));
    fill.write(answer("second", 2));
    fill.abandon();
    await settle();
    assert.equal(calls.get("set"), 1);
    assert.equal(calls.get("unlock"), 1);
    assert.equal((await rc.read("a"))?.storedAt, 1, "the first write stays");

    const abandoned = miss(await rc.lookup("b", TTL, ANY, signal()));
    abandoned.abandon();
    abandoned.abandon();
    abandoned.write(answer("late", 3));
    await settle();
    assert.equal(calls.get("set"), 1, "nothing written after abandon");
    assert.equal(calls.get("unlock"), 2);
    assert.equal(await rc.read("b"), undefined);
    assert.equal(await store.locked("b"), false);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a failing store bypasses, reports, and reports its return", async () => {
  const down = { value: true };
  const ev = events();
  const rc = createResponseCache({ store: flaky(down), lockWaitMs: 30_000, events: ev.sink });
  try {
    assert.equal(rc.ok, true, "ok until a call fails");
    assert.deepEqual(await rc.lookup("k", TTL, ANY, signal()), { kind: "bypass" });
    assert.equal(rc.ok, false);
    assert.equal(ev.failed.length, 1);
    assert.ok(ev.failed[0] instanceof Error);
    assert.equal(await rc.read("k"), undefined, "a failing store has no entry");
    assert.equal(await rc.check(), false);
    assert.equal(ev.failed.length, 3);
    assert.equal(ev.oks(), 0);

    down.value = false;
    const fill = miss(await rc.lookup("k", TTL, ANY, signal()));
    assert.equal(rc.ok, true);
    assert.equal(ev.oks(), 1, "storeOk once, on the first success after failures");
    fill.write(answer("x", 1));
    await settle();
    assert.equal(ev.oks(), 1, "not again while the store stays up");
    assert.equal(await rc.check(), true);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a store whose lock fails bypasses and leaves no flight behind", async () => {
  const down = { value: true };
  const ev = events();
  const rc = createResponseCache({
    store: flaky(down, new Set(["lock"])),
    lockWaitMs: 30_000,
    events: ev.sink,
  });
  try {
    assert.deepEqual(await rc.lookup("k", TTL, ANY, signal()), { kind: "bypass" });
    assert.equal(rc.ok, false);
    down.value = false;
    // not left waiting on the failed lookup's flight
    miss(await rc.lookup("k", TTL, ANY, signal())).abandon();
    assert.equal(rc.ok, true);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a failing write is counted but serves its waiters", async () => {
  const down = { value: false };
  const ev = events();
  const rc = createResponseCache({
    store: flaky(down, new Set(["set"])),
    lockWaitMs: 30_000,
    events: ev.sink,
  });
  try {
    const first = miss(await rc.lookup("k", TTL, ANY, signal()));
    const second = rc.lookup("k", TTL, ANY, signal());
    assert.ok(await pending(second));
    down.value = true;
    first.write(answer("x", Date.now()));
    hit(await second);
    await settle();
    assert.equal(ev.failed.length, 1);
    assert.equal(rc.ok, true, "the unlock after the failed set succeeded");
    down.value = false;
    assert.equal(await rc.read("k"), undefined, "nothing stored");
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: check is true while the store answers", async () => {
  const rc = cache();
  try {
    assert.equal(await rc.check(), true);
    assert.equal(rc.ok, true);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: read gives undefined for garbage and for entries of another version", async () => {
  const store = memory();
  const rc = createResponseCache({ store, lockWaitMs: 30_000 });
  try {
    const good = answer("x", 5);
    await store.set("good", JSON.stringify(good), TTL);
    await store.set("garbage", "not json {", TTL);
    await store.set("v2", JSON.stringify({ ...good, v: 2 }), TTL);
    assert.deepEqual(await rc.read("good"), good);
    assert.equal(await rc.read("garbage"), undefined);
    assert.equal(await rc.read("v2"), undefined);
    assert.equal(await rc.read("absent"), undefined);
    // a garbage entry is a miss for lookup, and its fill overwrites it
    const fill = miss(await rc.lookup("garbage", TTL, ANY, signal()));
    fill.write(good);
    await settle();
    assert.deepEqual(await rc.read("garbage"), good);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: parseEntry accepts only entries of this version", () => {
  const good = answer("x", 5);
  assert.deepEqual(parseEntry(JSON.stringify(good)), good);
  for (
    const raw of [
      undefined,
      "",
      "null",
      "42",
      '"text"',
      "[]",
      "{}",
      "{",
      JSON.stringify({ ...good, v: 2 }),
      JSON.stringify({ ...good, v: "1" }),
      JSON.stringify({ ...good, storedAt: "5" }),
      JSON.stringify({ ...good, completion: null }),
      JSON.stringify({ v: 1, storedAt: 5 }),
    ]
  ) {
    assert.equal(parseEntry(raw), undefined, String(raw));
  }
});

Deno.test("response cache: a semantic index per alias, replaced when its bound changes", async () => {
  const rc = cache();
  try {
    const a = rc.semanticIndex("a", 10);
    assert.equal(rc.semanticIndex("a", 10), a);
    assert.notEqual(rc.semanticIndex("b", 10), a);
    const resized = rc.semanticIndex("a", 20);
    assert.notEqual(resized, a);
    assert.equal(resized.maxEntries, 20);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: across replicas, a waiter polls the shared store and hits once the first writes", async () => {
  const { store, calls } = counting(memory());
  const one = createResponseCache({ store, lockWaitMs: 5_000 });
  const two = createResponseCache({ store, lockWaitMs: 5_000 });
  try {
    const first = miss(await one.lookup("k", TTL, ANY, signal()));
    assert.equal(await store.locked("k"), true);
    const second = two.lookup("k", TTL, ANY, signal());
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.ok(await pending(second), "the second replica waits for the first's fill");
    assert.ok((calls.get("locked") ?? 0) >= 1, "it polled the lock");
    assert.equal(calls.get("lock"), 2, "it tried the lock, which the first holds");
    first.write(answer("from one", Date.now()));
    assert.equal(hit(await second).provider, "p");
    // a third lookup on the second replica is a plain hit now
    hit(await two.lookup("k", TTL, ANY, signal()));
    await settle();
    assert.equal(await store.locked("k"), false);
  } finally {
    await one.close();
    await two.close();
  }
});

Deno.test("response cache: across replicas, an abandoned fill lets the waiter go on as a miss", async () => {
  const store = memory();
  const one = createResponseCache({ store, lockWaitMs: 5_000 });
  const two = createResponseCache({ store, lockWaitMs: 5_000 });
  try {
    const first = miss(await one.lookup("k", TTL, ANY, signal()));
    const second = two.lookup("k", TTL, ANY, signal());
    await new Promise((resolve) => setTimeout(resolve, 40));
    assert.ok(await pending(second));
    const started = performance.now();
    first.abandon();
    const fill = miss(await second);
    assert.ok(performance.now() - started < 1_000, "at once, not after lockWaitMs");
    assert.equal(await store.get("k"), undefined);
    fill.write(answer("from two", Date.now()));
    await settle();
    assert.equal((await one.read("k"))?.completion?.choices.length, 1, "the second replica's fill is shared");
  } finally {
    await one.close();
    await two.close();
  }
});

Deno.test("response cache: across replicas, a waiter gives up after lockWaitMs", async () => {
  const store = memory();
  const one = createResponseCache({ store, lockWaitMs: 5_000 });
  const two = createResponseCache({ store, lockWaitMs: 60 });
  try {
    const first = miss(await one.lookup("k", TTL, ANY, signal()));
    miss(await two.lookup("k", TTL, ANY, signal())).abandon();
    assert.equal(await store.locked("k"), true, "the first still holds its lock");
    first.abandon();
    await settle();
  } finally {
    await one.close();
    await two.close();
  }
});

Deno.test("response cache: across replicas, local waiters of the polling replica share its hit", async () => {
  const store = memory();
  const one = createResponseCache({ store, lockWaitMs: 5_000 });
  const two = createResponseCache({ store, lockWaitMs: 5_000 });
  try {
    const first = miss(await one.lookup("k", TTL, ANY, signal()));
    const polling = two.lookup("k", TTL, ANY, signal());
    const local = two.lookup("k", TTL, ANY, signal());
    assert.ok(await pending(local));
    first.write(answer("x", Date.now()));
    hit(await polling);
    hit(await local);
  } finally {
    await one.close();
    await two.close();
  }
});

Deno.test("response cache: a store no other process shares takes no locks; its flights still make others wait", async () => {
  const { store, calls } = counting(
    createMemoryCacheStore({ maxEntries: 100, maxBytes: 1_000_000, maxEntryBytes: 100_000 }),
  );
  const rc = createResponseCache({ store, lockWaitMs: 30_000 });
  try {
    const first = miss(await rc.lookup("k", TTL, ANY, signal()));
    const second = rc.lookup("k", TTL, ANY, signal());
    assert.ok(await pending(second));
    first.write(answer("x", Date.now()));
    hit(await second);
    await settle();
    assert.equal(calls.get("lock"), undefined);
    assert.equal(calls.get("unlock"), undefined);
    assert.equal(calls.get("set"), 1);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a store slower than the timeout is bypassed, not waited for", async () => {
  const inner = memory();
  const hanging: CacheStore = { ...inner, get: () => new Promise(() => {}) };
  const seen = events();
  const rc = createResponseCache({ store: hanging, lockWaitMs: 30_000, timeoutMs: 50, events: seen.sink });
  try {
    const started = performance.now();
    assert.deepEqual(await rc.lookup("k", TTL, ANY, signal()), { kind: "bypass" });
    assert.ok(performance.now() - started < 5_000, "bounded by the timeout, not by the store");
    assert.equal(rc.ok, false);
    assert.match(String(seen.failed[0]), /longer than 50 ms/);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: across replicas, an entry written between a lookup's read and its lock is found", async () => {
  const store = memory();
  const one = createResponseCache({ store, lockWaitMs: 5_000 });
  // The second replica's first read comes before the first one's write (as when both look up at once).
  let reads = 0;
  const late: CacheStore = {
    ...store,
    get: (key) => reads++ === 0 ? Promise.resolve(undefined) : store.get(key),
  };
  const two = createResponseCache({ store: late, lockWaitMs: 5_000 });
  try {
    miss(await one.lookup("k", TTL, ANY, signal())).write(answer("from one", Date.now()));
    await settle();
    assert.equal(await store.locked("k"), false, "the first replica wrote and let go of its lock");
    const found = hit(await two.lookup("k", TTL, ANY, signal()));
    assert.deepEqual(
      (found.completion?.choices[0] as { message: { content: string } }).message.content,
      "from one",
      "read again after taking the lock, not sent upstream",
    );
    assert.equal(await store.locked("k"), false, "and the lock it took is given back");
  } finally {
    await one.close();
    await two.close();
  }
});
