/**
 * Splits a zstd body into its frames by walking their headers and block headers (RFC 8878 §3.1), without
 * decoding anything, so that what the decoders of the runtimes let pass is refused here: on Deno
 * `zstdDecompressSync` decodes only a body's first frame (a body of two frames lost its second half), and on
 * both runtimes a body cut short inside a frame, or followed by bytes that are no frame, decodes without an
 * error. The walk costs one step per block (a block holds up to 128 KiB), so it is cheap next to decoding.
 *
 * @module
 */

/** The magic number that opens a zstd frame (RFC 8878 §3.1.1), little-endian. */
const FRAME_MAGIC = 0xfd2fb528;

/** Skippable frames (RFC 8878 §3.1.2) have magic numbers 0x184D2A50 to 0x184D2A5F: metadata, no content. */
const SKIPPABLE_MAGIC = 0x184d2a50;

/** Bytes of `Dictionary_ID` for each value of the descriptor's `Dictionary_ID_Flag`. */
const DICTIONARY_ID_BYTES = [0, 1, 2, 4];

/** A zstd body whose frames are not whole, or that holds something other than zstd frames. */
export class ZstdFrameError extends Error {}

/**
 * The zstd frames of `data`, each a view on it, in order; skippable frames are left out (the decoders skip them
 * too). Throws a {@linkcode ZstdFrameError} for bytes that are not a frame, a frame that ends before its last
 * block (or checksum), and a reserved block type or descriptor bit.
 */
export function zstdFrames(data: Uint8Array): Uint8Array[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const length = data.byteLength;
  const frames: Uint8Array[] = [];
  let at = 0;
  const need = (bytes: number) => {
    if (at + bytes > length) throw new ZstdFrameError("the zstd data ends in the middle of a frame");
  };
  while (at < length) {
    need(4);
    const magic = view.getUint32(at, true);
    if ((magic & 0xfffffff0) >>> 0 === SKIPPABLE_MAGIC) {
      need(8);
      at += 8 + view.getUint32(at + 4, true);
      need(0);
      continue;
    }
    if (magic !== FRAME_MAGIC) throw new ZstdFrameError("the data is not a sequence of zstd frames");
    const start = at;
    need(5);
    const descriptor = data[at + 4];
    if ((descriptor & 0x08) !== 0) throw new ZstdFrameError("a zstd frame header sets its reserved bit");
    const contentSizeFlag = descriptor >> 6;
    const singleSegment = (descriptor >> 5) & 1;
    const checksum = (descriptor >> 2) & 1;
    at += 5 + (singleSegment ? 0 : 1) + DICTIONARY_ID_BYTES[descriptor & 3] +
      (contentSizeFlag === 0 ? singleSegment : 1 << contentSizeFlag);
    while (true) {
      need(3);
      const header = data[at] | (data[at + 1] << 8) | (data[at + 2] << 16);
      const type = (header >> 1) & 3;
      if (type === 3) throw new ZstdFrameError("a zstd block has the reserved block type");
      // Raw and compressed blocks hold Block_Size bytes; an RLE block holds the one byte it repeats.
      at += 3 + (type === 1 ? 1 : header >>> 3);
      need(0);
      if ((header & 1) !== 0) break;
    }
    at += 4 * checksum;
    need(0);
    frames.push(data.subarray(start, at));
  }
  return frames;
}
