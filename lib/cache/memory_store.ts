/**
 * The in-process response cache: one replica's memory, bounded by entry count and by bytes, so a busy cache
 * cannot grow the process without limit. Least recently used entries go first; an entry also dies at its
 * TTL (lazily: an expired entry is a miss and is dropped when met, and expired entries are swept before live
 * ones are evicted). Fill locks live here too, so concurrent identical requests in one replica make one
 * upstream call.
 *
 * @module
 */
import type { CacheStore } from "./types.ts";
import { utf8Length } from "../encoding/utf8_length.ts";

/** Options of {@linkcode createMemoryCacheStore}. */
export interface MemoryCacheStoreOptions {
  /** At most this many entries; the least recently used are evicted past it. */
  readonly maxEntries: number;
  /** At most this many bytes (values' UTF-8 bytes plus their keys'); the least recently used go past it. */
  readonly maxBytes: number;
  /** A value of more UTF-8 bytes than this is not stored: one huge answer must not flush the cache. */
  readonly maxEntryBytes: number;
  /** Tests only: the clock (epoch ms) that TTLs and locks are measured on. */
  readonly now?: () => number;
  /** Tests only: several caches in one process share this store as replicas share Redis (they take its locks). */
  readonly shared?: boolean;
}

interface Entry {
  readonly value: string;
  readonly expiresAt: number;
  /** What the entry counts against `maxBytes`, kept so eviction need not measure it again. */
  readonly bytes: number;
}

interface Lock {
  readonly holder: string;
  expiresAt: number;
}

/**
 * A sweep of expired entries walks the whole map, so it runs at most this often (on the store's clock) when
 * the store is over budget; in between, plain LRU eviction applies. Keeps a full cache's `set` O(1).
 */
const SWEEP_INTERVAL_MS = 1_000;

/** Creates an empty memory store. */
export function createMemoryCacheStore(options: MemoryCacheStoreOptions): CacheStore {
  const now = options.now ?? Date.now;
  // A Map iterates in insertion order: re-inserting on every hit keeps the least recently used first.
  const entries = new Map<string, Entry>();
  const locks = new Map<string, Lock>();
  let bytes = 0;
  let lastSweep = -Infinity;

  const remove = (key: string, entry: Entry) => {
    entries.delete(key);
    bytes -= entry.bytes;
  };

  const overBudget = () => entries.size > options.maxEntries || bytes > options.maxBytes;

  /** Drops every expired entry and lock: they would otherwise wait for a read that may never come. */
  const sweep = (t: number) => {
    lastSweep = t;
    for (const [key, entry] of entries) if (entry.expiresAt <= t) remove(key, entry);
    for (const [key, lock] of locks) if (lock.expiresAt <= t) locks.delete(key);
  };

  const evict = (t: number) => {
    if (!overBudget()) return;
    if (t - lastSweep >= SWEEP_INTERVAL_MS) sweep(t);
    for (const [key, entry] of entries) {
      if (!overBudget()) break;
      remove(key, entry);
    }
  };

  /** `key`'s lock if it is still held; an expired one is dropped, as if given back. */
  const liveLock = (key: string, t: number): Lock | undefined => {
    const lock = locks.get(key);
    if (lock === undefined) return undefined;
    if (lock.expiresAt > t) return lock;
    locks.delete(key);
    return undefined;
  };

  return {
    kind: "memory",
    shared: options.shared ?? false,
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return Promise.resolve(undefined);
      if (entry.expiresAt <= now()) {
        remove(key, entry);
        return Promise.resolve(undefined);
      }
      entries.delete(key);
      entries.set(key, entry);
      return Promise.resolve(entry.value);
    },
    set(key, value, ttlMs) {
      const valueBytes = utf8Length(value);
      const size = valueBytes + utf8Length(key);
      // Not stored: too large for one entry or for the whole store, or already expired.
      if (valueBytes > options.maxEntryBytes || size > options.maxBytes || !(ttlMs > 0)) {
        return Promise.resolve();
      }
      const t = now();
      const old = entries.get(key);
      if (old !== undefined) remove(key, old);
      entries.set(key, { value, expiresAt: t + ttlMs, bytes: size });
      bytes += size;
      evict(t);
      return Promise.resolve();
    },
    lock(key, holder, ttlMs) {
      const t = now();
      // As in Redis, where `PX` must be positive: a lock that would be born expired is not taken.
      if (!(ttlMs > 0) || liveLock(key, t) !== undefined) return Promise.resolve(false);
      locks.set(key, { holder, expiresAt: t + ttlMs });
      return Promise.resolve(true);
    },
    renew(key, holder, ttlMs) {
      const t = now();
      const lock = liveLock(key, t);
      if (lock === undefined || lock.holder !== holder || !(ttlMs > 0)) return Promise.resolve(false);
      lock.expiresAt = t + ttlMs;
      return Promise.resolve(true);
    },
    unlock(key, holder) {
      if (locks.get(key)?.holder === holder) locks.delete(key);
      return Promise.resolve();
    },
    locked(key) {
      return Promise.resolve(liveLock(key, now()) !== undefined);
    },
    size() {
      return { entries: entries.size, bytes };
    },
    ping() {
      return Promise.resolve();
    },
    close() {
      entries.clear();
      locks.clear();
      bytes = 0;
      return Promise.resolve();
    },
  };
}
