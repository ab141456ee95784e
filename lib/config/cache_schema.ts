/**
 * The response cache's settings: the store and its bounds (top-level `cache:`), what an alias caches
 * (`models.<alias>.cache`), and what a token may do with it (`tokens[].cache`). Its own module so the main
 * schema stays a table of contents; docs/caching.md explains each key.
 *
 * @module
 */
import { z } from "zod";
import { byteSize, duration, timerDuration } from "./units_schema.ts";

/** Where entries live and how much of them; read at start (a reload keeps the store it has). */
export const cacheStoreSchema = z.strictObject({
  /** `memory`: this process, bounded below; `redis`: shared by every replica (needs `redis:`). */
  store: z.enum(["memory", "redis"]).default("memory"),
  /** Memory store: most entries kept (least recently used go first). */
  max_entries: z.number().int().min(1).max(10_000_000).default(10_000),
  /** Memory store: most bytes kept, keys and values. */
  max_bytes: byteSize.refine((n) => n > 0, "must be above 0").default(256 * 1024 ** 2),
  /** An answer larger than this is not cached (either store). */
  max_entry_bytes: byteSize.refine((n) => n > 0, "must be above 0").default(4 * 1024 ** 2),
  /** Default lifetime of an entry; an alias may set its own. */
  ttl: duration.refine((ms) => ms > 0, "must be above 0").default(3_600_000),
  /**
   * How long identical requests wait for the one in flight to fill the entry (single-flight) before going
   * upstream themselves.
   */
  lock_wait: timerDuration.default(30_000),
  /** Per store call; a slower one counts as the store being down (the request bypasses the cache). */
  timeout: timerDuration.refine((ms) => ms > 0, "must be above 0").default(250),
});

/** Semantic matching of an alias's last user turn (opt-in; the index is per replica, in memory). */
const semanticSchema = z.strictObject({
  /** The embedding alias the last user turn is embedded with (the gateway's own embedding path). */
  embeddings: z.string().min(1),
  /** Cosine similarity a hit needs; a client may raise it per request (`x-cache-semantic-threshold`). */
  threshold: z.number().min(0).max(1).default(0.95),
  /** Most entries the index keeps per replica (oldest go first). */
  max_entries: z.number().int().min(1).max(1_000_000).default(10_000),
  /**
   * How long the lookup waits for its embedding (the embedding alias's checks, retries and fallbacks included)
   * before it is a miss: it runs before every exact miss goes upstream, so a slow embedding upstream must not
   * hold the request for the target's own timeouts.
   */
  timeout: timerDuration.refine((ms) => ms > 0, "must be above 0").default(1_000),
});

/** What an alias caches; absent: the alias is not cached and its answers carry no `x-cache`. */
export const aliasCacheSchema = z.strictObject({
  /** Lifetime of this alias's entries; the top-level `cache.ttl` when absent. */
  ttl: duration.refine((ms) => ms > 0, "must be above 0").optional(),
  /** Who shares entries: one token (its identity), one environment, or every token of the alias. */
  scope: z.enum(["token", "environment", "shared"]).default("token"),
  /** Also cache answers cut by length or a content filter. */
  cache_incomplete: z.boolean().default(false),
  /** Also cache answers that end in tool calls for the client to run. */
  cache_tool_calls: z.boolean().default(false),
  /** Also cache requests for several choices (`n` > 1). */
  cache_n: z.boolean().default(false),
  semantic: semanticSchema.optional(),
});

/**
 * What a token does with the cache: `false` neither reads nor writes it; otherwise the `Cache-Control`
 * directives applied to each of its requests as if the client had sent them.
 */
export const tokenCacheSchema = z.union([
  z.literal(false),
  z.strictObject({
    /** Never read or write (as `Cache-Control: no-store`). */
    no_store: z.boolean().default(false),
    /** Never read, always refresh (as `Cache-Control: no-cache`). */
    no_cache: z.boolean().default(false),
    /** Accept only entries younger than this (as `Cache-Control: max-age`). */
    max_age: duration.optional(),
  }),
]);

export type CacheStoreConfig = z.output<typeof cacheStoreSchema>;
export type AliasCacheConfig = z.output<typeof aliasCacheSchema>;
export type TokenCacheConfig = z.output<typeof tokenCacheSchema>;
