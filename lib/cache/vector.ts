/**
 * An embedding as an upstream gives it: an array of numbers, or OpenAI's base64 form (little-endian float32
 * bytes). The semantic cache reads both.
 *
 * @module
 */

/** The numbers of an embedding in either form; undefined when it is neither. */
export function decodeVector(embedding: unknown): number[] | undefined {
  if (Array.isArray(embedding)) return embedding.every((v) => typeof v === "number") ? embedding : undefined;
  if (typeof embedding !== "string") return undefined;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(embedding), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
  const view = new DataView(bytes.buffer);
  const out = new Array<number>(Math.floor(bytes.byteLength / 4));
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}
