/**
 * The response cache's lookups and fills over the memory store within one replica: hits, `max-age`,
 * `no-cache`, `no-store`, and single-flight. Across replicas (two caches over one store):
 * response_cache_replicas_test.ts; a failing store and the parsing of stored entries:
 * response_cache_store_test.ts. The clock is injected where a test measures age; waits that a test bounds use
 * the real clock with small values.
 */
import assert from "node:assert/strict";
import type { CacheControl } from "./control.ts";
import { createMemoryCacheStore } from "./memory_store.ts";
import { createResponseCache } from "./response_cache.ts";
import {
  answer,
  ANY,
  cache,
  counting,
  hit,
  memory,
  miss,
  pending,
  settle,
  signal,
  TTL,
} from "./response_cache_test_helpers.ts";

const NO_CACHE: CacheControl = { read: false, write: true, maxAgeMs: null };
const NO_STORE: CacheControl = { read: false, write: false, maxAgeMs: null };

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
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

Deno.test("response cache: the TTL given at lookup (the alias's now, a reload shortened it) rejects an older entry", async () => {
  const c = clock();
  const { store, calls } = counting(memory(c.now));
  const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
  try {
    // Stored under `ttl: 1h`; the store would keep it for that hour.
    miss(await rc.lookup("k", TTL, ANY, signal())).write(answer("old", c.now()));
    await settle();
    c.advance(4_000);
    calls.clear();
    assert.equal(hit(await rc.lookup("k", TTL, ANY, signal())).storedAt, 1_000_000, "under 1h: a hit");
    assert.equal(calls.get("get"), 1, "a hit is one store read, nothing more");
    // Reloaded to `ttl: 2s`: the 4-second-old entry is expired, for lookups and the semantic cache's reads.
    const fill = miss(await rc.lookup("k", 2_000, ANY, signal()));
    assert.equal(await rc.read("k", ANY, 2_000), undefined);
    assert.equal(
      await rc.read("k", ANY, 4_000),
      undefined,
      "exactly the TTL old: expired, as the store expires it",
    );
    assert.equal((await rc.read("k", ANY, 4_001))?.storedAt, 1_000_000);
    assert.equal((await rc.read("k", ANY, TTL))?.storedAt, 1_000_000);
    fill.write(answer("new", c.now()));
    await settle();
    assert.equal(hit(await rc.lookup("k", 2_000, ANY, signal())).storedAt, 1_004_000, "the miss refilled it");
    c.advance(2_000);
    miss(await rc.lookup("k", 2_000, ANY, signal())).abandon();
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: an entry the alias's settings no longer admit is a miss, and its fill replaces it", async () => {
  const c = clock();
  const rc = cache({ now: c.now });
  const text = (a: { completion?: { choices: { message?: unknown }[] } }) =>
    (a.completion?.choices[0].message as { content: string }).content;
  const notOld = (a: Parameters<typeof text>[0]) => text(a) !== "old";
  try {
    miss(await rc.lookup("k", TTL, ANY, signal())).write(answer("old", c.now()));
    await settle();
    assert.equal(text(hit(await rc.lookup("k", TTL, ANY, signal(), () => true))), "old");
    const fill = miss(await rc.lookup("k", TTL, ANY, signal(), notOld));
    assert.equal(await rc.read("k", ANY, TTL, notOld), undefined);
    fill.write(answer("new", c.now()));
    await settle();
    assert.equal(text(hit(await rc.lookup("k", TTL, ANY, signal(), notOld))), "new");
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
    const written = answer("shared", c.now());
    first.write(written);
    const [two, three] = [hit(await second), hit(await third)];
    assert.deepEqual([two.storedAt, three.storedAt], [1_000_000, 1_000_000]);
    // Each answer is rendered in place for its own client (a fresh id): one client's never shows in another's.
    two.completion!.id = "chatcmpl-second";
    assert.deepEqual([three.completion?.id, written.completion?.id], ["chatcmpl-1", "chatcmpl-1"]);
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
    const rc = cache({ lockWaitMs: 60_000 });
    try {
      const first = miss(await rc.lookup("k", TTL, ANY, signal()));
      // The fill it would wait for is never ended before it answers: a waiter would still be pending here.
      const late = rc.lookup("k", TTL, ANY, AbortSignal.abort());
      assert.equal(await pending(late), false, "it waits for the fill (lockWaitMs) though its request ended");
      miss(await late).abandon();
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

Deno.test("response cache: an older answer written under another key lives only what is left of its ttl", async () => {
  // A semantic hit gives the paraphrase's key the answer it found (cached_route.ts): that answer must not be
  // served past the alias's ttl, counted from when it was first stored.
  const c = clock();
  const { store, calls } = counting(memory(c.now));
  const rc = createResponseCache({ store, lockWaitMs: 30_000, now: c.now });
  try {
    const storedAt = c.now();
    miss(await rc.lookup("original", TTL, ANY, signal())).write(answer("old", storedAt));
    await settle();
    c.advance(TTL - 1_000);
    miss(await rc.lookup("paraphrase", TTL, ANY, signal())).write(answer("old", storedAt));
    await settle();
    assert.equal(hit(await rc.lookup("paraphrase", TTL, ANY, signal())).storedAt, storedAt);
    c.advance(1_000);
    miss(await rc.lookup("original", TTL, ANY, signal())).abandon();
    miss(await rc.lookup("paraphrase", TTL, ANY, signal())).abandon();

    // An answer already past its ttl is not written at all.
    calls.clear();
    miss(await rc.lookup("late", TTL, ANY, signal())).write(answer("old", storedAt));
    await settle();
    assert.equal(calls.get("set"), undefined);
    miss(await rc.lookup("late", TTL, ANY, signal())).abandon();
  } finally {
    await rc.close();
  }
});
