/**
 * OpenAI's `x-ratelimit-*` response headers, so that clients and SDKs that pace themselves by them work
 * against the gateway unchanged.
 *
 * @module
 */

/** What OpenAI's headers report: request limits (RPM) or token limits (TPM). */
export type RateKind = "requests" | "tokens";

/** The state of one applying rate limit after the request. */
export interface RateLimitState {
  readonly kind: RateKind;
  readonly limit: number;
  readonly remaining: number;
  /** Milliseconds until the limit is back to its initial state (a full bucket). */
  readonly resetMs: number;
}

/**
 * A duration the way OpenAI writes it (Go's `time.Duration` format at millisecond resolution): "12ms",
 * "1s", "1.2s", "6m0s", "1h2m3.5s". Rounded up to whole milliseconds; never negative.
 */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.ceil(ms));
  if (total === 0) return "0s";
  if (total < 1000) return `${total}ms`;
  const hours = Math.floor(total / 3_600_000);
  const minutes = Math.floor((total % 3_600_000) / 60_000);
  const millis = total % 60_000;
  const seconds = `${Math.floor(millis / 1000)}${
    millis % 1000 === 0 ? "" : `.${String(millis % 1000).padStart(3, "0").replace(/0+$/, "")}`
  }s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${minutes}m${seconds}`;
  return seconds;
}

/** Whether `a` leaves the client less room than `b`: fewer remaining, then the lower limit, then later reset. */
function moreRestrictive(a: RateLimitState, b: RateLimitState): boolean {
  if (a.remaining !== b.remaining) return a.remaining < b.remaining;
  if (a.limit !== b.limit) return a.limit < b.limit;
  return a.resetMs > b.resetMs;
}

/**
 * The `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` headers for the most restrictive applying
 * limit of each kind (token or alias: the one with the fewest remaining). A kind with no applying limit gets
 * no headers, so a client never mistakes an absent limit for a zero one.
 */
export function rateLimitHeaders(states: readonly RateLimitState[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const kind of ["requests", "tokens"] as const) {
    let pick: RateLimitState | undefined;
    for (const s of states) if (s.kind === kind && (!pick || moreRestrictive(s, pick))) pick = s;
    if (!pick) continue;
    headers[`x-ratelimit-limit-${kind}`] = String(pick.limit);
    headers[`x-ratelimit-remaining-${kind}`] = String(Math.max(0, Math.floor(pick.remaining)));
    headers[`x-ratelimit-reset-${kind}`] = formatDuration(pick.resetMs);
  }
  return headers;
}
