/**
 * The current time as `toISOString()` text, remembered for the millisecond it names: the access-log line and
 * the usage record both want it on every request, and formatting a date costs more than the rest of writing
 * the line's fixed keys. Requests that finish within the same millisecond (any load worth measuring) share
 * one string. The text is exactly `new Date().toISOString()`'s; `Date` is read at each call, so a test's fake
 * clock is honoured.
 *
 * @module
 */

let lastMs = Number.NaN;
let lastText = "";

/** `new Date().toISOString()`, formatted at most once per millisecond. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastText;
}
