/**
 * How deeply a JSON text nests, found without parsing it. `JSON.parse` copes with deep nesting on Deno, but
 * much of what follows recurses (re-serialisation, validation, token estimation): a 600 KB body nested 100k
 * levels deep overflowed the stack on Bun and stalled the event loop on Deno. Checking the raw text first
 * refuses such a body before any of that work, in time linear in its length and without recursion.
 *
 * @module
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Every `{` and `[` in `text`, strings included, counted up to `max + 1`: a bound on its depth. */
function openersAtMost(text: string, max: number): boolean {
  let n = 0;
  for (let i = text.indexOf("{"); i >= 0; i = text.indexOf("{", i + 1)) if (++n > max) return false;
  for (let i = text.indexOf("["); i >= 0; i = text.indexOf("[", i + 1)) if (++n > max) return false;
  return true;
}

/**
 * True when arrays and objects in `text` nest more than `max` levels deep (`{}` is one level, `{"a":[]}`
 * two); brackets inside strings do not count. Malformed text gets an answer too (JSON.parse then reports
 * what is wrong with it).
 *
 * Everyday bodies have fewer brackets in all than the limit, which two native `indexOf` sweeps establish
 * (~120 ns for a 2 KB chat body); only bodies with more brackets than that are walked, jumping from quote to
 * quote over strings.
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  if (openersAtMost(text, max)) return false;
  let depth = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Jump to the closing quote: the next one not escaped by an odd run of backslashes.
      let end = i;
      while (true) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return false; // an unterminated string: not deep, just malformed
        let k = end - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break;
      }
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}
