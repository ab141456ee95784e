/**
 * Joins byte chunks into one buffer: what a body or frame read in pieces becomes once it is complete.
 *
 * @module
 */

/** The chunks in order as one `Uint8Array`; `size` is their total length, when the caller counted it already. */
export function concatBytes(
  parts: readonly Uint8Array[],
  size = parts.reduce((sum, part) => sum + part.byteLength, 0),
): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
