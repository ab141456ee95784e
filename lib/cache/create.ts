/**
 * Builds the response cache a config asks for: its store (memory, or Redis shared by the fleet under the
 * fleet's key prefix) and the lookups over it, reporting store failures to the metrics and the log.
 *
 * @module
 */
import type { ResolvedConfig } from "../config/types.ts";
import type { Logger } from "../log.ts";
import type { CacheMetrics } from "../metrics/cache_metrics.ts";
import { redisErrorText } from "../redis/errors.ts";
import { createMemoryCacheStore } from "./memory_store.ts";
import { createResponseCache, type ResponseCache } from "./response_cache.ts";
import type { CacheStore } from "./types.ts";

/** How long start-up waits for the Redis store before serving anyway (requests bypass it meanwhile). */
const REDIS_CONNECT_WAIT_MS = 2_000;

/**
 * The response cache of `config` (`cache:`); a Redis store needs `redis:` (the config check says so). Waits a
 * moment for Redis to connect, so the first requests of a healthy fleet do not bypass a store still dialling.
 */
export async function createConfiguredCache(
  config: ResolvedConfig,
  logger: Logger,
  metrics: CacheMetrics,
): Promise<ResponseCache> {
  const settings = config.cache;
  let store: CacheStore;
  if (settings.store === "redis" && config.redis !== null) {
    // Loaded only for a Redis store, as the counters' (lib/serve_state.ts): ioredis is slow to load.
    const { createRedisCacheStore } = await import("./redis_store.ts");
    const redis = createRedisCacheStore({
      url: config.redis.url,
      keyPrefix: config.redis.key_prefix,
      timeoutMs: settings.timeout,
      maxEntryBytes: settings.max_entry_bytes,
    });
    if (!await redis.whenReady(REDIS_CONNECT_WAIT_MS)) {
      logger.warn("cache_store_unavailable", { store: "redis", error: "not connected at start" });
    }
    store = redis;
  } else {
    store = createMemoryCacheStore({
      maxEntries: settings.max_entries,
      maxBytes: settings.max_bytes,
      maxEntryBytes: settings.max_entry_bytes,
    });
  }
  metrics.watch(() => store.size());
  // A store refusing calls (full, read-only) may do so on every write: said once, until its state changes.
  let refusalSaid = false;
  return createResponseCache({
    store,
    lockWaitMs: settings.lock_wait,
    timeoutMs: settings.timeout,
    events: {
      storeFailed(error) {
        metrics.storeErrors.inc([]);
        if (metrics.storeUp.get([]) === 1) {
          logger.warn("cache_store_unavailable", {
            store: store.kind,
            error: config.scrubber.scrub(redisErrorText(error)),
          });
        }
        metrics.storeUp.set([], 0);
        refusalSaid = false;
      },
      storeRefused(error) {
        metrics.storeErrors.inc([]);
        if (refusalSaid) return;
        refusalSaid = true;
        logger.warn("cache_store_refused", {
          store: store.kind,
          error: config.scrubber.scrub(redisErrorText(error)),
        });
      },
      storeOk() {
        metrics.storeUp.set([], 1);
        refusalSaid = false;
        logger.info("cache_store_available", { store: store.kind });
      },
    },
  });
}
