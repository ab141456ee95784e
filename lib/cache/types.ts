/**
 * The response cache's shared shapes: what an entry holds and what a store must do. Kept apart from the
 * stores and the orchestration so each of them (memory, Redis, replay, the runner's glue) depends only on
 * this file.
 *
 * @module
 */
import type { ChatCompletion, JsonObject } from "../openai/types.ts";

/**
 * One cached answer: the chat-form completion as the upstream gave it (a stream is kept as the completion it
 * added up to), whatever client API or shape filled it, rendered on a hit in the shape its client asks for
 * with a fresh id and `created`; or a natively passed-through answer, kept as the upstream gave it.
 */
export interface CachedAnswer {
  /** Entry layout version: an entry of another version is a miss. */
  v: 1;
  /** The answer in the chat form (a request translated to it); absent for a native one. */
  completion?: ChatCompletion;
  /**
   * A passed-through answer in its client API's own wire format, replayed only to that API and in the shape
   * that filled it: the body (one value) or every stream event in order.
   */
  native?: { api: string; stream: boolean; values: JsonObject[] };
  /** Epoch ms when it was stored (a hit's `Age`, and `max-age`). */
  storedAt: number;
  /** The target that answered: a hit's usage record names it, and prices what the hit saved. */
  provider: string;
  model: string;
}

/**
 * Where entries live: one process's memory (bounded by entries and bytes) or Redis (shared by a fleet). Values
 * are opaque strings (the serialised {@linkcode CachedAnswer}); keys are the hex digests the key builder makes,
 * the store adds its own prefix. Every method may reject (a store that is down or slow): the caller bypasses
 * the cache then, never fails the request.
 */
export interface CacheStore {
  readonly kind: "memory" | "redis";
  /**
   * Whether other processes read and write the same entries (Redis): only then do fills take the store's lock;
   * within one process the cache's own in-memory flights already make identical requests wait.
   */
  readonly shared: boolean;
  get(key: string): Promise<string | undefined>;
  /** Stores `value` for `ttlMs`; a value larger than the store's entry limit is not stored (no error). */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /**
   * Takes the fill lock of `key` for `holder` (a random id per fill) for `ttlMs`, unless someone holds it:
   * true when taken. A lock expires by itself, so a replica that dies holding it stalls nobody for long.
   */
  lock(key: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Extends `holder`'s lock to `ttlMs` from now; false when `holder` no longer holds it. */
  renew(key: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lock back if `holder` holds it (never someone else's). */
  unlock(key: string, holder: string): Promise<void>;
  /** Whether anyone holds the fill lock of `key`. */
  locked(key: string): Promise<boolean>;
  /** The store's size, where it knows it cheaply (the memory store); undefined for Redis. */
  size(): { entries: number; bytes: number } | undefined;
  /** Resolves when the store answers (Redis `PING` within the timeout); rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A call the store answered with a refusal (Redis's error reply: `OOM` when full under `maxmemory` with the
 * default `noeviction`, `READONLY` on a replica after a failover, `WRONGTYPE`). Unlike a timeout or a lost
 * connection it says the store is there: its entries still answer lookups, so it must not count as the store
 * being down (which would bypass hits it still holds, sending them upstream, while only its writes fail).
 */
export class CacheStoreRefusal extends Error {
  override name = "CacheStoreRefusal";
}
