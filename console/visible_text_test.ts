import assert from "node:assert/strict";
import { visibleText } from "./visible_text.ts";

Deno.test("visibleText: a right-to-left override shows as its code point, so the name reads as sent", () => {
  // Drawn as "admin" with the override obeyed; the console must show what was really sent.
  assert.equal(visibleText('denied user "\u202Enimda" of model x'), 'denied user "⟨U+202E⟩nimda" of model x');
});

Deno.test("visibleText: every bidi control, invisible format character and control character is marked", () => {
  const marked = [
    "\u202A",
    "\u202B",
    "\u202C",
    "\u202D",
    "\u202E", // embeddings, overrides, pop
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069", // isolates
    "\u200E",
    "\u200F",
    "\u061C", // marks
    "\u200B",
    "\u200C",
    "\u200D",
    "\u2060",
    "\uFEFF",
    "\u00AD", // zero-width and joiners, BOM, soft hyphen
    "\u2028",
    "\u2029", // line and paragraph separators
    "\u0000",
    "\u001B",
    "\u007F",
    "\u0085", // control characters
  ];
  for (const c of marked) {
    const hex = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    assert.equal(visibleText(`a${c}b`), `a⟨U+${hex}⟩b`, `U+${hex}`);
  }
  // Past the Basic Multilingual Plane: a tag character, one code point of two UTF-16 units.
  assert.equal(visibleText("x\u{E0041}y"), "x⟨U+E0041⟩y");
});

Deno.test("visibleText: ordinary text, right-to-left scripts, spaces and line breaks are unchanged", () => {
  for (
    const text of [
      "ci-bot",
      "Card payments squad — 1,000 tokens · 2026-11",
      "שלום עולם",
      "مرحبا",
      "tab\tand\nnewline\r\n",
      "no\u00A0break and thin\u2009space",
      "émoji 🚀 and 日本語",
      "",
    ]
  ) assert.equal(visibleText(text), text);
});

Deno.test("visibleText: characters drawn as nothing (default-ignorable) are marked, so two ids never look alike", () => {
  // Each renders "alice" exactly as the plain id does; the console must tell them apart.
  for (
    const [c, hex] of [
      ["\u034F", "034F"], // combining grapheme joiner
      ["\uFE0F", "FE0F"], // variation selector-16
      ["\uFE00", "FE00"], // variation selector-1
      ["\u115F", "115F"], // Hangul choseong filler
      ["\u3164", "3164"], // Hangul filler
      ["\u17B4", "17B4"], // Khmer vowel inherent aq
      ["\u{E0100}", "E0100"], // variation selector-17
    ]
  ) assert.equal(visibleText(`alice${c}`), `alice⟨U+${hex}⟩`, `U+${hex}`);
});
