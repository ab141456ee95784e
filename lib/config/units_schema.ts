/**
 * Config values with a unit: sizes (`"4MiB"`, `"512kb"`) and durations (`"30s"`, `"250ms"`), each also
 * accepted as a plain number of bytes or milliseconds. Its own module because the server, the providers, the
 * tokens and the admin API's token checks all read them, and each part of the schema imports it from here.
 *
 * @module
 */
import { z } from "zod";

const UNITS_BYTES: Record<string, number> = {
  b: 1,
  kb: 1000,
  kib: 1024,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
};
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function withUnit(units: Record<string, number>, what: string) {
  return z.union([
    z.number().int().nonnegative(),
    z.string().transform((text, ctx) => {
      const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$/.exec(text);
      const factor = m ? units[m[2].toLowerCase()] : undefined;
      if (!m || factor === undefined) {
        ctx.addIssue({
          code: "custom",
          message: `expected a ${what} such as ${Object.keys(units).map((u) => `"10${u}"`).join(", ")}`,
        });
        return z.NEVER;
      }
      return Math.round(Number(m[1]) * factor);
    }),
  ]);
}

/** A size in bytes: a number, or a string with a unit ("4MiB", "512kb"). */
export const byteSize = withUnit(UNITS_BYTES, "size");

/** Any duration as written, before a bound: each exported kind below holds it to its own. */
const anyDuration = withUnit(UNITS_MS, "duration");

/**
 * The longest duration any key takes, 36,500 days (about 100 years). Without a bound `usage.retention:
 * 200000000d` passed `check` and then every retention run failed on an invalid date (never deleting), and an
 * alias's `cache.ttl: 200000000000d` made every Redis write fail (`PX` must fit in 64 bits), both logged
 * without the key's name. A century is longer than any retention or TTL meant, and far inside both limits.
 */
export const MAX_DURATION_MS = 36_500 * 86_400_000;

/** A duration in milliseconds: a number, or a string with a unit ("30s", "250ms", "2m"); at most 36500d. */
export const duration = anyDuration.refine(
  (ms) => ms <= MAX_DURATION_MS,
  "must be at most 36500d (about 100 years)",
);

/**
 * The longest delay a timer keeps, 2³¹−1 ms (about 24.8 days): a longer one fires at once in every runtime, so a
 * timeout of "30d" would fire its timer every millisecond, with a warning on stderr each time.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A duration a timer waits for (a timeout, an interval, a backoff): at most {@linkcode MAX_TIMER_MS}. */
export const timerDuration = anyDuration.refine(
  (ms) => ms <= MAX_TIMER_MS,
  "must be at most 24d (the longest a timer waits)",
);

/**
 * A timeout that has no "off", refused at 0 with `why`, as the Redis, guardrail, alert and telemetry timeouts
 * are: an upstream call with `first_byte: 0` or `total: 0` was a 504 every time and `idle: 0` cut each stream
 * after its first chunk, all after `check` had said the file was valid.
 */
export function positiveTimeout(why: string) {
  return timerDuration.refine((ms) => ms > 0, `must be above 0 (${why})`);
}
