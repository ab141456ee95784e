/**
 * Text from outside (end-user ids from clients, descriptions, names, filter values) as the console shows it:
 * characters a browser obeys instead of drawing are replaced by a visible marker of their code point. A
 * right-to-left override (U+202E) in an end-user id would otherwise make `"\u202Enimda"` read as "admin" in
 * an alert; zero-width characters would make two different names look the same. Pure function, unit-tested;
 * `dom.ts` applies it to every text node and attribute it makes, so every view is covered at once.
 *
 * @module
 */

/**
 * What is marked: format characters (Unicode category Cf: the bidi embeddings, overrides, isolates and marks,
 * zero-width spaces and joiners, the byte order mark, the soft hyphen, tag characters), the line and paragraph
 * separators (a paragraph break resets the bidi order), control characters, and every other default-ignorable
 * code point (characters a font draws as nothing: variation selectors, the combining grapheme joiner, the Hangul
 * fillers), which would make `alice` and `alice\uFE0F` look the same; tab, line feed and carriage return stay,
 * as layout. A zero-width joiner inside an emoji sequence is marked too: an operator reading an audit must see
 * every character that was sent.
 */
const HIDDEN = /[\p{Cf}\p{Zl}\p{Zp}\p{Cc}\p{Default_Ignorable_Code_Point}]/gu;
const LAYOUT = new Set(["\t", "\n", "\r"]);

/** `text` with each hidden character as `⟨U+XXXX⟩`: `"\u202Enimda"` → "⟨U+202E⟩nimda". */
export function visibleText(text: string): string {
  return text.replace(HIDDEN, (c) => {
    if (LAYOUT.has(c)) return c;
    return `⟨U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}⟩`;
  });
}
