/**
 * The shared response cache: entries and fill locks in Redis, so a fleet's replicas share answers and one
 * replica's fill spares the others an upstream call.
 *
 * Key layout: `<key_prefix>cache:<key>` for entries, `<key_prefix>cache-lock:<key>` for fill locks. Both
 * expire by themselves (`PX`): Redis, not this process, keeps the TTLs, so an entry or a lock left behind by
 * a replica that died goes away on time.
 *
 * A lock's value is its holder; renewing and giving it back are small Lua scripts that compare the holder
 * first, in one step, so a replica whose lock expired and was taken by another never extends or deletes the
 * other's.
 *
 * Every call has the configured timeout (`commandTimeout`) and fails at once while disconnected (no offline
 * queue): the caller bypasses the cache then, so a slow or absent Redis costs a request nothing but the hit.
 *
 * @module
 */
import { closeRedis, connectRedis, redisReady } from "../redis/connection.ts";
import { utf8Length } from "../encoding/utf8_length.ts";
import { type CacheStore, CacheStoreRefusal } from "./types.ts";
import { ReplyError } from "ioredis";

/** Options of {@linkcode createRedisCacheStore}. */
export interface RedisCacheStoreOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://` for TLS). */
  readonly url: string;
  /** Starts every key, so that several fleets (or a cache and its counters' tests) can share one Redis. */
  readonly keyPrefix: string;
  /** Per call, in ms: a call that takes longer fails, and the request goes upstream instead. */
  readonly timeoutMs: number;
  /** A value of more UTF-8 bytes than this is not stored: one huge answer must not crowd out Redis. */
  readonly maxEntryBytes: number;
}

/** A Redis cache store, with what the composition root and the tests need to wait for its connection. */
export interface RedisCacheStore extends CacheStore {
  readonly kind: "redis";
  /** Resolves once connected (true), or with false after `ms`, whichever comes first. */
  whenReady(ms: number): Promise<boolean>;
}

/** `KEYS[1]` lock, `ARGV[1]` holder, `ARGV[2]` ttl ms: extends the lock only while `holder` holds it. */
const RENEW_LUA = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
`;

/** `KEYS[1]` lock, `ARGV[1]` holder: deletes the lock only while `holder` holds it. */
const UNLOCK_LUA = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
`;

type Script = (...args: (string | number)[]) => Promise<unknown>;

interface Scripts {
  gwCacheRenew: Script;
  gwCacheUnlock: Script;
}

/** `PX` takes a positive integer: rounds a TTL up, and answers undefined for one that is not positive. */
function px(ttlMs: number): number | undefined {
  const ms = Math.ceil(ttlMs);
  return ms > 0 ? ms : undefined;
}

/**
 * `call`, with Redis's error replies (the server answered, refusing the command) told apart from failures to
 * reach it: the cache keeps using a store that refuses writes (`OOM`, `READONLY`) for the entries it holds.
 */
async function answered<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (err) {
    throw err instanceof ReplyError ? new CacheStoreRefusal((err as Error).message) : err;
  }
}

/** Creates a Redis cache store; it connects in the background and reconnects by itself. */
export function createRedisCacheStore(options: RedisCacheStoreOptions): RedisCacheStore {
  const client = connectRedis(options.url, options.timeoutMs);
  // Connection errors surface as failed calls; the caller decides what to log.
  client.defineCommand("gwCacheRenew", { numberOfKeys: 1, lua: RENEW_LUA });
  client.defineCommand("gwCacheUnlock", { numberOfKeys: 1, lua: UNLOCK_LUA });
  const scripts = client as unknown as Scripts;

  const entryKey = (key: string) => `${options.keyPrefix}cache:${key}`;
  const lockKey = (key: string) => `${options.keyPrefix}cache-lock:${key}`;

  return {
    kind: "redis",
    shared: true,
    async get(key) {
      return (await answered(client.get(entryKey(key)))) ?? undefined;
    },
    async set(key, value, ttlMs) {
      const ms = px(ttlMs);
      if (ms === undefined || utf8Length(value) > options.maxEntryBytes) return;
      await answered(client.set(entryKey(key), value, "PX", ms));
    },
    async lock(key, holder, ttlMs) {
      const ms = px(ttlMs);
      if (ms === undefined) return false;
      return (await answered(client.set(lockKey(key), holder, "PX", ms, "NX"))) === "OK";
    },
    async renew(key, holder, ttlMs) {
      const ms = px(ttlMs);
      if (ms === undefined) return false;
      return Number(await answered(scripts.gwCacheRenew(lockKey(key), holder, ms))) === 1;
    },
    async unlock(key, holder) {
      await answered(scripts.gwCacheUnlock(lockKey(key), holder));
    },
    async locked(key) {
      return (await answered(client.exists(lockKey(key)))) > 0;
    },
    size() {
      return undefined;
    },
    async ping() {
      await answered(client.ping());
    },
    whenReady: (ms) => redisReady(client, ms),
    close: () => closeRedis(client),
  };
}
