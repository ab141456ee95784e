/**
 * The signature of an alert's body: HMAC-SHA256 keyed by the receiver's `secret`, over the exact bytes sent,
 * so a receiver can tell the gateway's alerts from anyone else's posts (and from a body changed on the way).
 * WebCrypto, so it runs unchanged on Deno and Bun.
 *
 * A receiver recomputes `sha256=` + hex(HMAC-SHA256(secret, raw body)) and compares in constant time.
 *
 * @module
 */

/** The header that carries the signature. */
export const SIGNATURE_HEADER = "x-gateway-signature";

const encoder = new TextEncoder();

/** Hex of bytes, lowercase. */
function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** `sha256=<lowercase hex HMAC-SHA256(secret, rawBody)>`: the value of {@linkcode SIGNATURE_HEADER}. */
export async function signBody(secret: string, rawBody: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return `sha256=${hex(await crypto.subtle.sign("HMAC", key, encoder.encode(rawBody)))}`;
}
