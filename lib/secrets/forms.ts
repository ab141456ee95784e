/**
 * The forms in which an upstream quotes a secret besides the secret itself: base64 and base64url, as a client
 * library or proxy encodes a credential (`Authorization: Basic base64(user:secret)`, a header's value
 * base64-encoded in a debug dump, `base64("Bearer " + key)`). The scrubber masks each of them whole.
 *
 * @module
 */

/** The ASCII upper-case letter `code` as lower case; any other code as it is. Case folding for the run scan. */
export function foldCode(code: number): number {
  return code >= 65 && code <= 90 ? code | 32 : code;
}

/** `text` with ASCII letters lower-cased, as {@linkcode foldCode} folds each: the key of a run in the scan. */
export function foldText(text: string): string {
  return /[A-Z]/.test(text) ? text.replace(/[A-Z]+/g, (upper) => upper.toLowerCase()) : text;
}

/** Standard base64 of bytes. */
function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * The base64 and base64url characters that encode `secret`'s UTF-8 bytes and nothing else, for each of the three
 * alignments it can have in an encoded text: whatever precedes it (`Bearer `, `user:`, nothing), the encoding of
 * the secret itself holds one of these, as its bytes start at a multiple of 3 bytes, one byte past, or two. The
 * characters that also carry bits of what comes before or after (and the `=` padding) are left out, so each form
 * is found as it stands inside any longer encoded text.
 */
export function encodedForms(secret: string): string[] {
  const bytes = new TextEncoder().encode(secret);
  const forms = new Set<string>();
  for (let shift = 0; shift < 3; shift++) {
    const shifted = new Uint8Array(shift + bytes.length);
    shifted.set(bytes, shift);
    // Character i carries bits [6i, 6i + 6); the secret's bits are [8 × shift, 8 × (shift + length)).
    const core = base64(shifted).slice(Math.ceil(8 * shift / 6), Math.floor(8 * (shift + bytes.length) / 6));
    forms.add(core);
    forms.add(core.replaceAll("+", "-").replaceAll("/", "_"));
  }
  return [...forms];
}
