import assert from "node:assert/strict";
import { decodeFloat32Base64, encodeFloat32Base64 } from "./float32_base64.ts";

Deno.test("float32 base64: a vector goes there and back, for every padding", () => {
  for (const vector of [[0.5], [0.5, -0.25], [0.5, -0.25, 1], [1, 2, 3, 4, 5, 6, 7]]) {
    assert.deepEqual(decodeFloat32Base64(encodeFloat32Base64(vector)), vector);
  }
  // OpenAI's own: [0.5, -0.25] as little-endian float32.
  assert.equal(encodeFloat32Base64([0.5, -0.25]), "AAAAPwAAgL4=");
});

Deno.test("float32 base64: what is not a whole, non-empty vector in strict base64 is refused", () => {
  const notVectors = [
    "", // nothing
    "not base64!!", // not base64 at all
    "AAAAPw", // padding missing
    "AAAA PwAA", // whitespace
    "AAAAPw-_", // URL-safe letters
    "AAAA", // 3 bytes: not a whole float
    "AAAAPwA=", // 5 bytes
    "AAAAPwAAgA==", // 7 bytes
    "AAAAPw==\n", // a trailing newline
  ];
  for (const text of notVectors) assert.equal(decodeFloat32Base64(text), null, JSON.stringify(text));
  assert.deepEqual(decodeFloat32Base64("AAAAPw=="), [0.5]);
});
