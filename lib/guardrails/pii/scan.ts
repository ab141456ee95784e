/**
 * What the built-in recognizers share: character classes by code unit, the boundary rules for numbers, and the
 * randomness test of key-shaped secrets.
 *
 * Every recognizer scans by hand or with regular expressions that have no nested quantifiers, so that each
 * character of a text is looked at a bounded number of times: a recognizer runs on every message of every
 * guarded request, and on each hold-back window of a stream, so quadratic behaviour on a hostile text would be
 * a denial of service.
 *
 * @module
 */

/** `0`–`9`. */
export function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** `A`–`Z`. */
export function isUpper(c: number): boolean {
  return c >= 65 && c <= 90;
}

/** `a`–`z`. */
export function isLower(c: number): boolean {
  return c >= 97 && c <= 122;
}

/** ASCII letter or digit. */
export function isAlnum(c: number): boolean {
  return isDigit(c) || isUpper(c) || isLower(c);
}

const NON_ASCII_WORD = /[\p{L}\p{N}\p{M}]/u;

/**
 * Whether `text[i]` belongs to a word: an ASCII letter, digit or `_`, or any Unicode letter, number or mark.
 * Out of range is not a word character, so the start and end of a text are boundaries.
 */
export function isWordAt(text: string, i: number): boolean {
  if (i < 0 || i >= text.length) return false;
  const c = text.charCodeAt(i);
  if (c < 128) return isAlnum(c) || c === 95;
  return NON_ASCII_WORD.test(text[i]);
}

/** Whether `text[i]` is an ASCII digit (false out of range). */
export function isDigitAt(text: string, i: number): boolean {
  return i >= 0 && i < text.length && isDigit(text.charCodeAt(i));
}

/**
 * Characters that glue a number to what stands before it: `ORD-2026…`, `v1.2…`, `#123…`, `$1…`, `+1…` (a
 * recognizer that wants the `+` includes it in its match, so the character before is then another one).
 */
const GLUE_BEFORE = new Set("-./\\#+_@$€£¥%~^&*|");
/** Characters that glue a number to what follows it when a word character or digit comes next: `…-beta`, `…/2`. */
const GLUE_AFTER_IF_WORD = new Set("-./\\:,");
/** Characters that always glue a number to what follows: `…@host`, `…%`, `…€`. */
const GLUE_AFTER = new Set("@%$€£¥+*|~^");

/**
 * Whether a number starting at `start` stands on its own on the left: no word character before it, no gluing
 * punctuation (`ORD-`, `v1.`, `#`, a currency sign), and no `12:` / `1,` before it (a time, a list of numbers).
 */
export function numberStartsAt(text: string, start: number): boolean {
  if (start === 0) return true;
  if (isWordAt(text, start - 1)) return false;
  const before = text[start - 1];
  if (GLUE_BEFORE.has(before)) return false;
  if ((before === ":" || before === ",") && isDigitAt(text, start - 2)) return false;
  return true;
}

/**
 * Whether a number ending at `end` stands on its own on the right: no word character after it, no `@`, `%` or
 * currency sign, and no `-x`, `/2`, `.5`, `:30`, `,5` continuing it.
 */
export function numberEndsAt(text: string, end: number): boolean {
  if (end >= text.length) return true;
  if (isWordAt(text, end)) return false;
  const after = text[end];
  if (GLUE_AFTER.has(after)) return false;
  if (GLUE_AFTER_IF_WORD.has(after) && isWordAt(text, end + 1)) return false;
  return true;
}

/**
 * Whether a key-shaped string looks machine-generated: it has a digit, an upper-case and a lower-case letter.
 * Random base62/base64 of 20+ characters has all three with overwhelming probability (missing one is below 1%
 * at 36 characters); words and identifiers written by people (`sk-this-is-my-key-for-tests`) rarely do.
 */
export function looksRandom(s: string): boolean {
  let digit = false, upper = false, lower = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c)) digit = true;
    else if (isUpper(c)) upper = true;
    else if (isLower(c)) lower = true;
    if (digit && upper && lower) return true;
  }
  return false;
}
