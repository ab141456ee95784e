import assert from "node:assert/strict";
import { decodeUtf8Base64, encodeUtf8Base64 } from "./utf8_base64.ts";
import { randomHex } from "./random_hex.ts";

Deno.test("utf8 base64: text beyond Latin-1 round-trips; what is not base64 of UTF-8 is null", () => {
  for (const text of ["", "plain", "naïve — 東京 🚀"]) {
    assert.equal(decodeUtf8Base64(encodeUtf8Base64(text)), text);
  }
  assert.equal(encodeUtf8Base64("é"), "w6k=");
  assert.equal(decodeUtf8Base64("not base64!"), null);
  assert.equal(decodeUtf8Base64(btoa("\xff\xfe")), null, "bytes that are not UTF-8");
});

Deno.test("random hex: twice as many lower-case hex digits as bytes, different each time", () => {
  assert.match(randomHex(12), /^[0-9a-f]{24}$/);
  assert.notEqual(randomHex(12), randomHex(12));
});
