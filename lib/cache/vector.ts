/**
 * An embedding as an upstream gives it: an array of numbers, or OpenAI's base64 form (little-endian float32
 * bytes). The semantic cache reads both.
 *
 * @module
 */

import { decodeFloat32Base64 } from "../encoding/float32_base64.ts";

/**
 * The most dimensions a semantic cache keeps of one embedding. Embedding models give a few thousand (3,072 for
 * OpenAI's and Google's largest, 4,096 for the biggest open ones); an upstream answering with a million would
 * otherwise have each indexed turn hold megabytes, and each lookup multiply through all of them on the event
 * loop.
 */
export const MAX_VECTOR_DIMENSIONS = 16_384;

/**
 * The numbers of an embedding in either form; undefined when it is neither (base64 read strictly), or when it
 * has more than {@linkcode MAX_VECTOR_DIMENSIONS} (such a turn is not looked up by meaning, nor indexed).
 */
export function decodeVector(embedding: unknown): number[] | undefined {
  if (Array.isArray(embedding)) {
    if (embedding.length > MAX_VECTOR_DIMENSIONS) return undefined;
    return embedding.every((v) => typeof v === "number") ? embedding : undefined;
  }
  if (typeof embedding !== "string") return undefined;
  // Four bytes a dimension, four base64 characters for every three bytes: checked before decoding.
  if (embedding.length > Math.ceil((MAX_VECTOR_DIMENSIONS * 4) / 3) * 4) return undefined;
  return decodeFloat32Base64(embedding) ?? undefined;
}
