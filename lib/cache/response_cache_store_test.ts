/**
 * The response cache and its store: a failing or slow store is bypassed and reported, and so is its return;
 * once a call failed, the store is tried by one lookup per probe interval only (on the test's clock), the others
 * bypassing it at once; stored entries are parsed (garbage and entries of another version read as absent).
 */
import assert from "node:assert/strict";
import { type CacheStore, CacheStoreRefusal } from "./types.ts";
import { type CacheEvents, createResponseCache, parseEntry } from "./response_cache.ts";
import {
  answer,
  ANY,
  cache,
  hit,
  memory,
  miss,
  pending,
  settle,
  signal,
  TTL,
} from "./response_cache_test_helpers.ts";
import { backstop } from "../../tests/helpers/backstop.ts";
import { STORE_PROBE_INTERVAL_MS } from "../timers/store_breaker.ts";

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

/** A store that answers its writes (`set`, `lock`) with a refusal while `refusing.value`, as a full Redis does. */
function refusingWrites(refusing: { value: boolean }): CacheStore {
  const inner = flaky({ value: false });
  const refuse = <T>(op: () => Promise<T>): Promise<T> =>
    refusing.value
      ? Promise.reject(new CacheStoreRefusal("OOM command not allowed when used memory > 'maxmemory'."))
      : op();
  return {
    ...inner,
    set: (key, value, ttl) => refuse(() => inner.set(key, value, ttl)),
    lock: (key, holder, ttl) => refuse(() => inner.lock(key, holder, ttl)),
  };
}

function events() {
  const failed: unknown[] = [];
  let oks = 0;
  const sink: CacheEvents = { storeFailed: (err) => failed.push(err), storeOk: () => oks++ };
  return { sink, failed, oks: () => oks };
}

Deno.test("response cache: a failing store bypasses, reports, and reports its return", async () => {
  const down = { value: true };
  const ev = events();
  let t = Date.now();
  const rc = createResponseCache({ store: flaky(down), lockWaitMs: 30_000, events: ev.sink, now: () => t });
  try {
    assert.equal(rc.ok, true, "ok until a call fails");
    assert.deepEqual(await rc.lookup("k", TTL, ANY, signal()), { kind: "bypass" });
    assert.equal(rc.ok, false);
    assert.equal(ev.failed.length, 1);
    assert.ok(ev.failed[0] instanceof Error);
    assert.equal(await rc.read("k"), undefined, "a failing store has no entry");
    assert.equal(await rc.check(), false);
    assert.equal(ev.failed.length, 1, "not tried again before the probe interval: nothing more to report");
    t += STORE_PROBE_INTERVAL_MS;
    assert.equal(await rc.check(), false, "the probe");
    assert.equal(ev.failed.length, 2);
    assert.equal(ev.oks(), 0);

    down.value = false;
    assert.deepEqual(
      await rc.lookup("k", TTL, ANY, signal()),
      { kind: "bypass" },
      "back, but not probed yet",
    );
    t += STORE_PROBE_INTERVAL_MS;
    const fill = miss(await rc.lookup("k", TTL, ANY, signal()));
    assert.equal(rc.ok, true);
    assert.equal(ev.oks(), 1, "storeOk once, on the first success after failures");
    fill.write(answer("x", Date.now()));
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
  let t = Date.now();
  const rc = createResponseCache({
    store: flaky(down, new Set(["lock"])),
    lockWaitMs: 30_000,
    events: ev.sink,
    now: () => t,
  });
  try {
    assert.deepEqual(await rc.lookup("k", TTL, ANY, signal()), { kind: "bypass" });
    assert.equal(rc.ok, false);
    down.value = false;
    t += STORE_PROBE_INTERVAL_MS;
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
    const good = answer("x", Date.now());
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

Deno.test("response cache: a store slower than the timeout is bypassed, not waited for", async () => {
  const inner = memory();
  const hanging: CacheStore = { ...inner, get: () => new Promise(() => {}) };
  const seen = events();
  const rc = createResponseCache({ store: hanging, lockWaitMs: 30_000, timeoutMs: 50, events: seen.sink });
  try {
    // The store never answers: the lookup ends only by the timeout, whose failure it reports.
    assert.deepEqual(await backstop(rc.lookup("k", TTL, ANY, signal()), "the lookup"), { kind: "bypass" });
    assert.equal(rc.ok, false);
    assert.match(String(seen.failed[0]), /longer than 50 ms/);
  } finally {
    await rc.close();
  }
});

Deno.test("response cache: a store that refuses writes (full, read-only) is up and keeps serving its entries", async () => {
  const refusing = { value: false };
  const ev = events();
  const refused: unknown[] = [];
  const t = Date.now();
  const rc = createResponseCache({
    store: refusingWrites(refusing),
    lockWaitMs: 30_000,
    events: { ...ev.sink, storeRefused: (err) => refused.push(err) },
    now: () => t,
  });
  try {
    const fill = miss(await rc.lookup("hot", TTL, ANY, signal()));
    fill.write(answer("kept", t));
    await settle();
    refusing.value = true;
    for (let i = 0; i < 4; i++) {
      assert.deepEqual(
        await rc.lookup(`cold-${i}`, TTL, ANY, signal()),
        { kind: "bypass" },
        "a new question goes upstream uncached: its fill lock was refused",
      );
      // The clock stands still: a store taken for down would not be tried again before the probe interval.
      const found = hit(await rc.lookup("hot", TTL, ANY, signal()));
      assert.equal(found.storedAt, t, "the entry the store holds still answers");
    }
    assert.equal(rc.ok, true, "a store that answers is up");
    assert.equal(ev.failed.length, 0, "no failure reported");
    assert.equal(refused.length, 4, "each refusal reported as one");
    assert.ok(refused.every((err) => err instanceof CacheStoreRefusal));
  } finally {
    await rc.close();
  }
});
