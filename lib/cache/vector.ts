/**
 * An embedding as an upstream gives it: an array of numbers, or OpenAI's base64 form (little-endian float32
 * bytes). The semantic cache reads both.
 *
 * @module
 */

import { decodeFloat32Base64 } from "../encoding/float32_base64.ts";

/** The numbers of an embedding in either form; undefined when it is neither (base64 read strictly). */
export function decodeVector(embedding: unknown): number[] | undefined {
  if (Array.isArray(embedding)) return embedding.every((v) => typeof v === "number") ? embedding : undefined;
  if (typeof embedding !== "string") return undefined;
  return decodeFloat32Base64(embedding) ?? undefined;
}
