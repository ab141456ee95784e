/**
 * What a request may do with the cache: its `Cache-Control` header (RFC 9111's request directives, the ones
 * that mean something here) together with its token's settings, which apply as if the client had sent them.
 *
 * - `no-store`: neither read nor write (`x-cache: BYPASS`);
 * - `no-cache`: do not read, go upstream and refresh the entry (`MISS`);
 * - `max-age=N`: accept only an entry younger than N seconds (an older one is a `MISS` and is refreshed).
 *
 * @module
 */
import type { ResolvedTokenCache } from "../config/types.ts";

/** What one request does with the cache. */
export interface CacheControl {
  /** Consult the cache (false: `no-store` or `no-cache`). */
  read: boolean;
  /** Write a cacheable answer (false: `no-store`). */
  write: boolean;
  /** The oldest entry accepted, in ms; null for any unexpired one. */
  maxAgeMs: number | null;
}

const ANY: CacheControl = { read: true, write: true, maxAgeMs: null };

/**
 * The request's control from its `Cache-Control` header and its token's settings; the stricter of the two
 * wins. Directives are case-insensitive; unknown ones and malformed `max-age` values are ignored (RFC 9111
 * §5.2: a cache ignores what it does not understand).
 */
export function cacheControl(
  header: string | null,
  token: ResolvedTokenCache | null | undefined,
): CacheControl {
  if (header === null && !token) return ANY;
  let read = true;
  let write = true;
  let maxAgeMs: number | null = null;
  for (const part of (header ?? "").split(",")) {
    const [name, value] = part.trim().toLowerCase().split("=", 2);
    if (name === "no-store") read = write = false;
    else if (name === "no-cache") read = false;
    else if (name === "max-age" && value !== undefined && /^\d{1,10}$/.test(value.trim())) {
      const ms = Number(value.trim()) * 1000;
      maxAgeMs = maxAgeMs === null ? ms : Math.min(maxAgeMs, ms);
    }
  }
  if (token) {
    if (token.noStore) read = write = false;
    if (token.noCache) read = false;
    if (token.maxAgeMs !== null) {
      maxAgeMs = maxAgeMs === null ? token.maxAgeMs : Math.min(maxAgeMs, token.maxAgeMs);
    }
  }
  return { read, write, maxAgeMs };
}
