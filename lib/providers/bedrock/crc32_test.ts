import assert from "node:assert/strict";
import { crc32 } from "./crc32.ts";

const text = (s: string) => new TextEncoder().encode(s);

Deno.test("crc32: the standard check value and the empty input", () => {
  // CRC-32/ISO-HDLC check value for "123456789".
  assert.equal(crc32(text("123456789")), 0xcbf43926);
  assert.equal(crc32(new Uint8Array()), 0);
  assert.equal(crc32(text("The quick brown fox jumps over the lazy dog")), 0x414fa339);
});

Deno.test("crc32: continuing over pieces equals one pass", () => {
  const all = text("hello, event stream framing");
  for (let cut = 0; cut <= all.length; cut++) {
    assert.equal(crc32(all.subarray(cut), crc32(all.subarray(0, cut))), crc32(all));
  }
});

Deno.test("crc32: the prelude CRC of AWS's empty event-stream message", () => {
  // aws-c-event-stream / botocore vector: 00000010 00000000 | 05c248eb | 7d98c8ff
  const prelude = new Uint8Array([0, 0, 0, 0x10, 0, 0, 0, 0]);
  assert.equal(crc32(prelude), 0x05c248eb);
  const withCrc = new Uint8Array([...prelude, 0x05, 0xc2, 0x48, 0xeb]);
  assert.equal(crc32(withCrc), 0x7d98c8ff);
});
