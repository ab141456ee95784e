import assert from "node:assert/strict";
import zlib from "node:zlib";
import { ZstdFrameError, zstdFrames } from "./zstd_frames.ts";

const text = new TextEncoder().encode(JSON.stringify({ input: "y".repeat(400_000) }));

/** With a checksum and the content size declared, so every optional header field is walked over. */
const checked = zlib.zstdCompressSync(text, {
  params: { [zlib.constants.ZSTD_c_checksumFlag]: 1, [zlib.constants.ZSTD_c_contentSizeFlag]: 1 },
});
const plain = zlib.zstdCompressSync(text.subarray(0, 10));

/** A skippable frame (RFC 8878 §3.1.2) of `size` bytes of metadata. */
function skippable(size: number): Uint8Array {
  const out = new Uint8Array(8 + size);
  new DataView(out.buffer).setUint32(0, 0x184d2a53, true);
  new DataView(out.buffer).setUint32(4, size, true);
  return out;
}

Deno.test("zstdFrames: frames in a row come out each whole; skippable frames are left out", () => {
  const body = new Uint8Array([...skippable(5), ...checked, ...skippable(0), ...plain]);
  const frames = zstdFrames(body);
  assert.deepEqual(frames.map((f) => f.byteLength), [checked.byteLength, plain.byteLength]);
  assert.deepEqual(zlib.zstdDecompressSync(frames[0]), Buffer.from(text));
  assert.deepEqual(zstdFrames(new Uint8Array(0)), []);
});

Deno.test("zstdFrames: a frame cut anywhere, trailing bytes and reserved bits are refused", () => {
  for (let cut = 1; cut < checked.byteLength; cut += Math.max(1, Math.floor(checked.byteLength / 50))) {
    assert.throws(() => zstdFrames(checked.subarray(0, cut)), ZstdFrameError, `cut at ${cut}`);
  }
  assert.throws(() => zstdFrames(new Uint8Array([...plain, 0x28])), ZstdFrameError);
  assert.throws(() => zstdFrames(skippable(4).subarray(0, 10)), ZstdFrameError);
  const reserved = Uint8Array.from(plain);
  reserved[4] |= 0x08;
  assert.throws(() => zstdFrames(reserved), /reserved bit/);
  assert.throws(() => zstdFrames(new TextEncoder().encode('{"a":1}')), /not a sequence of zstd frames/);
});
