/**
 * Text as standard base64 of its UTF-8 bytes and back: what `data:text/plain;base64,…` holds (a plain-text
 * document in the chat form), which `btoa`/`atob` alone cannot do for text beyond Latin-1.
 *
 * @module
 */

/** `text`'s UTF-8 bytes in standard base64. */
export function encodeUtf8Base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** The text whose UTF-8 bytes `data` encodes; null when `data` is not base64 or not UTF-8. */
export function decodeUtf8Base64(data: string): string | null {
  try {
    const binary = atob(data);
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}
