/**
 * CRC-32 (IEEE 802.3 / zlib polynomial 0xEDB88320, reflected), as AWS's binary event-stream framing uses for
 * both its prelude and message checksums. Web platforms have no built-in CRC, so a table-driven one lives here.
 *
 * @module
 */

const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * The CRC-32 of `bytes`, as an unsigned 32-bit number. Pass a previous result as `previous` to continue a
 * checksum over data that arrives in pieces.
 */
export function crc32(bytes: Uint8Array, previous = 0): number {
  let crc = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) crc = TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
