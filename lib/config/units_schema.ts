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
/** A duration in milliseconds: a number, or a string with a unit ("30s", "250ms", "2m"). */
export const duration = withUnit(UNITS_MS, "duration");

/**
 * The longest delay a timer keeps, 2³¹−1 ms (about 24.8 days): a longer one fires at once in every runtime, so a
 * timeout of "30d" would fire its timer every millisecond, with a warning on stderr each time.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A duration a timer waits for (a timeout, an interval, a backoff): at most {@linkcode MAX_TIMER_MS}. */
export const timerDuration = duration.refine(
  (ms) => ms <= MAX_TIMER_MS,
  "must be at most 24d (the longest a timer waits)",
);
