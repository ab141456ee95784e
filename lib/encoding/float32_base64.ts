/**
 * An embedding in OpenAI's `encoding_format: "base64"` form: the standard base64 of its little-endian float32
 * bytes, what the openai SDKs ask for by default and decode. The one encoder and the one decoder for every
 * place a vector crosses that form: the embeddings answer in either encoding, the check of an upstream's
 * answer, the semantic cache's reading of a vector.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** Little-endian float32 bytes of `vector`, base64-encoded. */
export function encodeFloat32Base64(vector: readonly number[]): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < vector.length; i++) view.setFloat32(i * 4, vector[i], true);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** Standard base64 with its padding, nothing else (no whitespace, no URL-safe letters, no missing `=`). */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The vector `text` encodes, or null when it is not one: not strict base64, or bytes that are not a whole,
 * non-zero number of float32s. (Decoders are lenient, so `"not base64!!"` would otherwise decode to something,
 * and a length cut to the last whole float would lose the rest silently.)
 */
export function decodeFloat32Base64(text: string): number[] | null {
  if (text.length === 0 || !STRICT_BASE64.test(text)) return null;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const byteLength = (text.length / 4) * 3 - padding;
  if (byteLength % 4 !== 0) return null;
  const bytes = Buffer.from(text, "base64");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(byteLength / 4);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * Whether `value` is an embedding vector every client can be given: a non-empty array of numbers, each finite
 * once stored as a float32. The one check of every provider's vectors (OpenAI-compatible, Bedrock, Gemini): a
 * JSON number such as `1e400` parses to Infinity, which `JSON.stringify` would write as `null` for a float
 * client; and a finite float64 beyond float32's range (|x| > 3.4028234663852886e38) would reach a base64
 * client as ±Infinity. The docs promise one answer for both encodings, so either is the upstream's 502, not a
 * vector one client gets and the other does not. (No embedding model computes beyond float32.)
 */
export function isFloat32Vector(value: unknown): value is number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const n of value) if (typeof n !== "number" || !Number.isFinite(Math.fround(n))) return false;
  return true;
}
