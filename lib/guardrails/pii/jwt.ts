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

/** The JWT recognizer. */
export const jwt: Recognizer = { type: "JWT", find };
