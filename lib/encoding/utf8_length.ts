/**
 * The UTF-8 size of a string without encoding it: byte budgets (the response cache, the SSE parser's event
 * bound, captured telemetry content) count what a text costs on the wire, and an encoder would allocate a copy
 * of every text measured.
 *
 * @module
 */

/**
 * The UTF-8 length of `text[from, to)` (the whole text by default). A lone surrogate counts 3 bytes, as
 * `TextEncoder` encodes it (U+FFFD).
 */
export function utf8Length(text: string, from = 0, to = text.length): number {
  let bytes = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < to) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
