/**
 * Waiting for an event without betting on a clock. A test awaits the event itself (an upstream request
 * aborted, a log line, a replica serving a change); the backstop only turns an event that never comes into a
 * failure that says what was awaited, instead of a suite that hangs until CI kills it.
 *
 * It is not a timing claim. {@linkcode BACKSTOP_MS} is far beyond what any awaited event takes on a loaded
 * 2-core machine (milliseconds, a second or two at worst), and a test whose event has a slow alternative (a
 * lock wait, a Redis pause, an idle timeout) makes that alternative ten minutes or more, so the alternative
 * can never pass for the event and a regression to it fails here instead of passing late.
 *
 * @module
 */

/** How long a test waits for an event before it fails saying which. */
export const BACKSTOP_MS = 30_000;

/** The failure of an awaited event that never came; a test expecting a rejection tells it from the one it expects. */
export class BackstopError extends Error {
  constructor(what: string, ms: number) {
    super(`${what}: not within the ${ms} ms backstop`);
    this.name = "BackstopError";
  }
}

/** `promise`, or a {@linkcode BackstopError} naming `what` once `ms` passed without it settling. */
export function backstop<T>(promise: Promise<T>, what: string, ms = BACKSTOP_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BackstopError(what, ms)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Polls `check` every `everyMs` until it holds; fails naming `what` after `ms`. Resolves to the milliseconds it
 * took, for a log line (never for an assertion).
 */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  { ms = BACKSTOP_MS, everyMs = 25 }: { ms?: number; everyMs?: number } = {},
): Promise<number> {
  const started = performance.now();
  while (!await check()) {
    if (performance.now() - started > ms) throw new BackstopError(what, ms);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return performance.now() - started;
}
