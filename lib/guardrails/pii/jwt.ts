/**
 * JWT: JSON Web Tokens in compact serialization (RFC 7519 over RFC 7515), `header.payload.signature`.
 *
 * A candidate is a maximal run of base64url characters and dots starting with `eyJ` (the encoding of `{"`),
 * nothing of that alphabet glued before it, and exactly three segments (a trailing sentence dot is left out).
 * The confidence rule is decoding: the header and the payload must be base64url of UTF-8 JSON objects, the
 * header with a string `alg`; the signature must be base64url, empty only when `alg` is `none` (an unsecured
 * JWT). Five-segment JWE tokens are not matched. Anything inside a JWT (an e-mail in its payload's text) is
 * part of the one JWT finding; the index resolves such overlaps.
 *
 * On a stream (holdback.ts) a JWT can be longer than the window (real ones often are): `long.unfinished`
 * reports a run starting with `eyJ` that reaches the end of the text and can still become a JWT (fewer than
 * three dots, a header that decodes, if it is complete), so the stream holds it until a character outside the
 * alphabet ends it and checks it whole; `long.rest` finds that end in the text that continues a run cut at the
 * stream's cap.
 *
 * Cost: each character is read once by the run scan (a run starts only where the previous character is
 * outside the alphabet), and only three-segment runs are decoded, each once.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isAlnum } from "./scan.ts";

function isJwtChar(c: number): boolean {
  return isAlnum(c) || c === 45 || c === 95 || c === 46; // - _ .
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** The JSON object a base64url segment encodes, or `null`. */
function decodeObject(segment: string): Record<string, unknown> | null {
  if (segment.length % 4 === 1 || !BASE64URL.test(segment)) return null;
  try {
    const binary = atob(segment.replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
    const value: unknown = JSON.parse(UTF8.decode(bytes));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value as Record<string, unknown>
      : null;
  } catch {
    return null;
  }
}

/** Whether `token` (three segments) is a JWT by the rules above. */
export function isJwt(token: string): boolean {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[1] === "") return false;
  const [header, payload, signature] = parts;
  if (!BASE64URL.test(signature) || signature.length % 4 === 1) return false;
  const h = decodeObject(header);
  if (h === null || typeof h.alg !== "string") return false;
  if ((signature === "") !== (h.alg.toLowerCase() === "none")) return false;
  return decodeObject(payload) !== null;
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  for (let i = text.indexOf("eyJ"); i !== -1; i = text.indexOf("eyJ", i + 1)) {
    if (i > 0 && isJwtChar(text.charCodeAt(i - 1))) continue;
    let end = i;
    let dots = 0;
    while (end < n && isJwtChar(text.charCodeAt(end))) {
      if (text.charCodeAt(end) === 46) dots++;
      end++;
    }
    const next = end;
    if (text[end - 1] === "." && dots === 3) {
      end--; // a sentence's full stop after the token
      dots--;
    }
    if (dots === 2 && isJwt(text.slice(i, end))) out.push({ type: "JWT", start: i, end });
    i = next - 1;
  }
  return out;
}

/** The end of the run of JWT characters starting at `from`. */
function runEnd(text: string, from: number): number {
  let end = from;
  while (end < text.length && isJwtChar(text.charCodeAt(end))) end++;
  return end;
}

/** Where a run that reaches the end of `text` and may still grow into a JWT begins, or -1. */
function unfinished(text: string): number {
  for (let i = text.indexOf("eyJ"); i !== -1; i = text.indexOf("eyJ", i + 1)) {
    if (i > 0 && isJwtChar(text.charCodeAt(i - 1))) continue;
    const end = runEnd(text, i);
    if (end < text.length) {
      i = end - 1;
      continue;
    }
    const run = text.slice(i);
    const parts = run.split(".");
    // Three dots only if the last is a sentence's full stop (the next character may still end the token).
    if (parts.length > 4 || (parts.length === 4 && parts[3] !== "")) return -1;
    if (parts.length > 1) {
      const header = decodeObject(parts[0]);
      if (header === null || typeof header.alg !== "string") return -1;
    }
    return i;
  }
  return -1;
}

/** Where the run of JWT characters that `text` continues ends; all of `text` while none ends it. */
function rest(text: string): { end: number; ended: boolean } {
  const end = runEnd(text, 0);
  return { end, ended: end < text.length };
}

/** The JWT recognizer. */
export const jwt: Recognizer = { type: "JWT", find, long: { unfinished, rest } };
