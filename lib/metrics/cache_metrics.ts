/**
 * The response cache's metrics: lookups by outcome (from the usage record, like every request metric, so they
 * agree with `/admin/usage`), the store's failures and state, and its size where the store knows it.
 *
 * @module
 */
import type { Counter, Gauge, Registry } from "./registry.ts";

/** The store's size, read when `/metrics` is rendered. */
export type CacheSizeSource = () => { entries: number; bytes: number } | undefined;

/** The cache's series on the gateway's registry. */
export class CacheMetrics {
  readonly hits: Counter<readonly ["alias", "kind"]>;
  readonly misses: Counter<readonly ["alias"]>;
  readonly bypass: Counter<readonly ["alias"]>;
  readonly storeErrors: Counter<readonly []>;
  readonly storeUp: Gauge<readonly []>;
  readonly entries: Gauge<readonly []>;
  readonly bytes: Gauge<readonly []>;
  #size: CacheSizeSource | undefined;

  constructor(registry: Registry, options: { maxSeries: number }) {
    this.hits = registry.counter(
      "gateway_cache_hits_total",
      "Requests answered from the response cache, by alias and kind (exact or semantic).",
      ["alias", "kind"],
      options,
    );
    this.misses = registry.counter(
      "gateway_cache_misses_total",
      "Requests of a cached alias that went upstream (not found, too old for max-age, or refreshed by no-cache).",
      ["alias"],
      options,
    );
    this.bypass = registry.counter(
      "gateway_cache_bypass_total",
      "Requests of a cached alias that did not consult the cache (no-store, a token without the cache, a store that is down, a guardrail that changed the request or checks its answer, a refusal before the lookup, a token count).",
      ["alias"],
      options,
    );
    this.storeErrors = registry.counter(
      "gateway_cache_store_errors_total",
      "Calls to the response cache's store that failed or timed out (the request bypassed the cache).",
      [],
      options,
    );
    this.storeUp = registry.gauge(
      "gateway_cache_store_up",
      "1 while the response cache's store answers, 0 after a failed call until one succeeds.",
      [],
      options,
    );
    this.entries = registry.gauge(
      "gateway_cache_entries",
      "Entries in the response cache (memory store).",
      [],
      options,
    );
    this.bytes = registry.gauge(
      "gateway_cache_bytes",
      "Bytes in the response cache (memory store).",
      [],
      options,
    );
  }

  /** Counts one request of a cached alias by its record's `cache`; `alias` is already a bounded label. */
  recordLookup(alias: string, cache: string): void {
    if (cache === "hit" || cache === "hit_semantic") {
      this.hits.inc([alias, cache === "hit" ? "exact" : "semantic"]);
    } else if (cache === "miss") this.misses.inc([alias]);
    else if (cache === "bypass") this.bypass.inc([alias]);
  }

  /** A cache exists: its store counts as up until a call fails; its size is read from `source`. */
  watch(source: CacheSizeSource): void {
    this.storeUp.set([], 1);
    this.#size = source;
  }

  /** Brings the size gauges up to date (before rendering). */
  refresh(): void {
    const size = this.#size?.();
    if (size === undefined) return;
    this.entries.set([], size.entries);
    this.bytes.set([], size.bytes);
  }
}
