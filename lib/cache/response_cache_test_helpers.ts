/** Helpers shared by the response cache tests: answers, stores (counting calls), lookups and their waits. */
import assert from "node:assert/strict";
import type { CachedAnswer, CacheStore } from "./types.ts";
import type { CacheControl } from "./control.ts";
import { createMemoryCacheStore } from "./memory_store.ts";
import {
  createResponseCache,
  type Lookup,
  type ResponseCache,
  type ResponseCacheOptions,
} from "./response_cache.ts";

export const TTL = 3_600_000;
export const ANY: CacheControl = { read: true, write: true, maxAgeMs: null };

export function answer(text: string, storedAt: number): CachedAnswer {
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
export const memory = (now?: () => number) =>
  createMemoryCacheStore({ maxEntries: 100, maxBytes: 1_000_000, maxEntryBytes: 100_000, now, shared: true });

/** Counts each store call by method name; `onCall` hears of each as it is made. */
export function counting(
  store: CacheStore,
  onCall: (name: string) => void = () => {},
): { store: CacheStore; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const count = (name: string) => {
    calls.set(name, (calls.get(name) ?? 0) + 1);
    onCall(name);
  };
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

export function cache(overrides: Partial<ResponseCacheOptions> = {}): ResponseCache {
  return createResponseCache({ store: memory(overrides.now), lockWaitMs: 30_000, ...overrides });
}

export const signal = () => new AbortController().signal;

/** Lets pending promise callbacks (the fill's write and unlock) run. */
export const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export function miss(lookup: Lookup) {
  assert.equal(lookup.kind, "miss");
  return (lookup as Extract<Lookup, { kind: "miss" }>).fill;
}

export function hit(lookup: Lookup): CachedAnswer {
  assert.equal(lookup.kind, "hit");
  return (lookup as Extract<Lookup, { kind: "hit" }>).answer;
}

/** Whether `promise` is still pending after the current callbacks have run. */
export async function pending(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => done = true, () => done = true);
  await settle();
  return !done;
}
