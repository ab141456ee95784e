/**
 * The one rule for a token count an upstream reports, whatever the vendor (OpenAI-compatible, Anthropic, Gemini,
 * Bedrock), in a whole answer, in a stream's cumulative updates, and on the native paths: a non-negative safe
 * integer. Anything else (a string, a negative or fractional number, 1e20) is not a count. Usage is untrusted
 * input: a negative count would erase real spend from a budget, one past the database's integer range would
 * fail the batch its record is written in, a string would be read as 0. Usage whose counts are not counts is
 * treated as no usage, so the gateway counts the tokens itself (marked `tokens_estimated`).
 *
 * @module
 */

/** True for a token count as the gateway trusts one: a non-negative safe integer. */
export function isTokenCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** How {@linkcode readCounts} takes each count of a usage. */
export interface CountReader {
  /** A required count. */
  (value: unknown): number;
  /** An optional count: `absent` when the field is missing (undefined, or null as some vendors send it). */
  <A extends number | undefined>(value: unknown, absent: A): number | A;
}

/**
 * What `read` builds from a vendor's usage, each count taken through `count`, or undefined when any count is not
 * one (a required count missing, or any count present that is not a count). One such count makes the whole
 * usage untrusted: the others may be as wrong, and a partial usage would price the request as less than it was.
 */
export function readCounts<T>(read: (count: CountReader) => T): T | undefined {
  let trusted = true;
  const count = (value: unknown, ...absent: [number | undefined] | []): number | undefined => {
    if (isTokenCount(value)) return value;
    if (absent.length > 0 && (value === undefined || value === null)) return absent[0];
    trusted = false;
    return 0;
  };
  const result = read(count as CountReader);
  return trusted ? result : undefined;
}
