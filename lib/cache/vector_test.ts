/**
 * Embeddings as upstreams give them: arrays of numbers, or base64 of little-endian float32 bytes.
 */
import assert from "node:assert/strict";
import { decodeVector, MAX_VECTOR_DIMENSIONS } from "./vector.ts";
import { encodeFloat32Base64 } from "../encoding/float32_base64.ts";

Deno.test("vector: an array of numbers is itself", () => {
  assert.deepEqual(decodeVector([0.25, -1, 3]), [0.25, -1, 3]);
  assert.deepEqual(decodeVector([]), []);
});

Deno.test("vector: base64 little-endian float32, as the embeddings endpoint encodes it", () => {
  // values exact in float32, so the round trip is exact
  const vector = [0.5, -0.25, 1, 0, 1024.125, -3.75];
  assert.deepEqual(decodeVector(encodeFloat32Base64(vector)), vector);
  // other values come back as their float32 rounding
  const inexact = [0.1, -0.7, 1 / 3];
  const decoded = decodeVector(encodeFloat32Base64(inexact));
  assert.deepEqual(decoded, inexact.map(Math.fround));
  // little-endian: 1.0f is 00 00 80 3f
  assert.deepEqual(decodeVector(btoa(String.fromCharCode(0x00, 0x00, 0x80, 0x3f))), [1]);
});

Deno.test("vector: base64 of no float, or with trailing bytes short of a float, is no vector", () => {
  assert.equal(decodeVector(""), undefined);
  const bytes = String.fromCharCode(0x00, 0x00, 0x80, 0x3f, 0x01, 0x02);
  assert.equal(decodeVector(btoa(bytes)), undefined);
});

Deno.test("vector: garbage is undefined", () => {
  for (
    const garbage of [
      undefined,
      null,
      42,
      true,
      {},
      { embedding: [1] },
      [1, "2"],
      [1, null],
      [[1]],
      "not base64!",
      "%%%%",
    ]
  ) {
    assert.equal(decodeVector(garbage), undefined, JSON.stringify(garbage));
  }
});

Deno.test("vector: an embedding past MAX_VECTOR_DIMENSIONS is none, in either form, so no cache entry holds it", () => {
  const most = new Array(MAX_VECTOR_DIMENSIONS).fill(0.5);
  assert.equal(decodeVector(most)?.length, MAX_VECTOR_DIMENSIONS);
  assert.equal(decodeVector(encodeFloat32Base64(most))?.length, MAX_VECTOR_DIMENSIONS);
  const past = new Array(MAX_VECTOR_DIMENSIONS + 1).fill(0.5);
  assert.equal(decodeVector(past), undefined);
  assert.equal(decodeVector(encodeFloat32Base64(past)), undefined);
  // An upstream's million-dimension answer (megabytes per indexed turn).
  assert.equal(decodeVector(encodeFloat32Base64(new Array(1_000_000).fill(1))), undefined);
});
