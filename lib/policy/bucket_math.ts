/**
 * The arithmetic of token buckets and period counters (counter_store.ts): the in-memory store computes with it,
 * and the Redis scripts do the same in Lua.
 *
 * @module
 */

/** Slack for floating-point refill arithmetic, far below one unit. */
export const EPSILON = 1e-9;

/** A bucket's stored state: its level at instant `at`. */
export interface BucketState {
  readonly level: number;
  readonly at: number;
}

/** The level of a bucket at `now`: refilled continuously, capped at the limit; an absent bucket is full. */
export function bucketLevel(
  state: BucketState | undefined,
  limit: number,
  windowMs: number,
  now: number,
): number {
  if (!state) return limit;
  const elapsed = Math.max(0, now - state.at);
  return Math.min(limit, state.level + (elapsed * limit) / windowMs);
}

/** Milliseconds until a bucket at `level` is full again. */
export function msUntilFull(level: number, limit: number, windowMs: number): number {
  return level >= limit - EPSILON ? 0 : Math.ceil(((limit - level) * windowMs) / limit);
}

/** Milliseconds until a bucket at `level` holds `amount` (0 if it already does). */
export function msUntilAvailable(level: number, amount: number, limit: number, windowMs: number): number {
  return level >= amount - EPSILON ? 0 : Math.ceil(((amount - level) * windowMs) / limit);
}

/**
 * Whether a period counter at `used` admits a reservation of `amount` under `limit`: within the limit with
 * the amount added; a zero amount (a read) passes while the counter is below the limit.
 */
export function periodAllows(used: number, amount: number, limit: number): boolean {
  return amount > 0 ? used + amount <= limit + EPSILON : used < limit;
}

/** Whether a bucket at `level` can give `amount`; a zero amount is a read and always passes. */
export function bucketAllows(level: number, amount: number): boolean {
  return amount <= 0 || level >= amount - EPSILON;
}
