/**
 * Random hex: the random part of every id the gateway makes (`tok_…`, `aud_…`, `chatcmpl-…`, a reservation's
 * marker), from the platform's CSPRNG.
 *
 * @module
 */

/** `bytes` random bytes as lower-case hex (twice as many characters). */
export function randomHex(bytes: number): string {
  let hex = "";
  for (const b of crypto.getRandomValues(new Uint8Array(bytes))) hex += b.toString(16).padStart(2, "0");
  return hex;
}
