import assert from "node:assert/strict";
import { utf8Length } from "./utf8_length.ts";

Deno.test("utf8Length agrees with TextEncoder", () => {
  const samples = ["", "abc", "é", "€uro", "日本語", "😀", "a😀b", "\ud800", "x\udc00y", "\ud83d"];
  for (const sample of samples) {
    assert.equal(utf8Length(sample), new TextEncoder().encode(sample).length, JSON.stringify(sample));
  }
});

Deno.test("utf8Length: a range counts only its own code units", () => {
  const text = "a\u00e9\u4e2d\u{1f600}z";
  assert.equal(utf8Length(text, 1, 3), 2 + 3);
  assert.equal(utf8Length(text, 3, 5), 4);
  // A pair cut by the range's end counts as a lone surrogate.
  assert.equal(utf8Length(text, 3, 4), 3);
});
