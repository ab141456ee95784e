/**
 * The response cache across replicas: two caches over one shared memory store (its locks taken, as Redis's
 * are), where a waiter polls the store for the first replica's fill.
 */
import assert from "node:assert/strict";
import type { CacheStore } from "./types.ts";
import { createResponseCache } from "./response_cache.ts";
import {
  answer,
  ANY,
  counting,
  hit,
  memory,
  miss,
  pending,
  settle,
  signal,
  TTL,
} from "./response_cache_test_helpers.ts";
import { backstop } from "../../tests/helpers/backstop.ts";

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
  // "At once" is counted in the waiter's polls of the store, not in milliseconds: each poll starts with a read
  // (`get`), and the poll after the abandon finds the lock gone and ends the wait. Its other way out,
  // lockWaitMs, is ten minutes here, so it cannot pass for the abandon; a waiter still polling three polls
  // after the abandon is the regression, and fails at once rather than after lockWaitMs.
  let polls = 0;
  let afterAbandon: number | undefined;
  const waiting = Promise.withResolvers<void>();
  const stillWaiting = Promise.withResolvers<"still waiting">();
  const { store } = counting(memory(), (name) => {
    if (name === "locked") waiting.resolve();
    if (name === "get" && afterAbandon !== undefined && ++polls - afterAbandon >= 3) {
      stillWaiting.resolve("still waiting");
    }
  });
  const one = createResponseCache({ store, lockWaitMs: 600_000 });
  const two = createResponseCache({ store, lockWaitMs: 600_000 });
  const client = new AbortController();
  try {
    const first = miss(await one.lookup("k", TTL, ANY, signal()));
    polls = 0;
    const second = two.lookup("k", TTL, ANY, client.signal);
    await backstop(waiting.promise, "the second replica polls the first one's lock");
    assert.ok(await pending(second), "the second replica waits for the first's fill");
    afterAbandon = polls;
    first.abandon();
    const outcome = await backstop(Promise.race([second, stillWaiting.promise]), "the waiter goes on");
    if (outcome === "still waiting") {
      client.abort();
      assert.fail("the waiter still polls the store three polls after the fill it waited for was abandoned");
    }
    const fill = miss(outcome);
    assert.equal(await store.get("k"), undefined);
    fill.write(answer("from two", Date.now()));
    await settle();
    assert.equal((await one.read("k"))?.completion?.choices.length, 1, "the second replica's fill is shared");
  } finally {
    client.abort();
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

Deno.test("response cache: across replicas, a fill abandoned twice leaves the next leader's lock alone", async () => {
  const { store, calls } = counting(memory());
  const one = createResponseCache({ store, lockWaitMs: 5_000 });
  const two = createResponseCache({ store, lockWaitMs: 5_000 });
  try {
    // A streamed fill past max_entry_bytes abandons mid-stream, and its stream's end may say so again.
    const first = miss(await one.lookup("k", TTL, ANY, signal()));
    first.abandon();
    await settle();
    assert.equal(await store.locked("k"), false, "the lock is given back at the first abandon");
    const next = miss(await two.lookup("k", TTL, ANY, signal()));
    assert.equal(await store.locked("k"), true, "the next request leads, under its own lock");
    first.abandon();
    await settle();
    assert.equal(await store.locked("k"), true, "the second abandon releases nothing");
    assert.equal(calls.get("unlock"), 1);
    next.abandon();
    await settle();
    assert.equal(await store.locked("k"), false);
  } finally {
    await one.close();
    await two.close();
  }
});
