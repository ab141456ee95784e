/**
 * IBAN: international bank account numbers (ISO 13616).
 *
 * A match is a country code with a registered IBAN length, two check digits (02–98) and the BBAN, in upper
 * case, either compact (`DE89370400440532013000`) or grouped by single spaces in fours as printed
 * (`DE89 3704 0044 0532 0130 00`). The confidence rule is the standard's own: the length must be the
 * country's exactly, and the number moved into digits (country code and check digits to the end, letters as
 * 10–35) must be 1 modulo 97. A random string of the right shape passes one time in 97, and nothing failing the
 * checksum is reported. Lower-case IBANs are not matched (the printed and electronic forms are upper case), nor
 * ones grouped by dashes or glued to other letters or digits.
 *
 * Cost: each candidate reads at most 34 characters plus spaces, and candidates start only at `[A-Z]{2}\d{2}`.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isAlnum, isDigit, isUpper } from "./scan.ts";

/** The IBAN length of each country in the IBAN registry (SWIFT), which includes every SEPA country. */
export const IBAN_LENGTHS: ReadonlyMap<string, number> = new Map([
  ["AD", 24],
  ["AE", 23],
  ["AL", 28],
  ["AT", 20],
  ["AZ", 28],
  ["BA", 20],
  ["BE", 16],
  ["BG", 22],
  ["BH", 22],
  ["BR", 29],
  ["BY", 28],
  ["CH", 21],
  ["CR", 22],
  ["CY", 28],
  ["CZ", 24],
  ["DE", 22],
  ["DK", 18],
  ["DO", 28],
  ["EE", 20],
  ["EG", 29],
  ["ES", 24],
  ["FI", 18],
  ["FO", 18],
  ["FR", 27],
  ["GB", 22],
  ["GE", 22],
  ["GI", 23],
  ["GL", 18],
  ["GR", 27],
  ["GT", 28],
  ["HR", 21],
  ["HU", 28],
  ["IE", 22],
  ["IL", 23],
  ["IQ", 23],
  ["IS", 26],
  ["IT", 27],
  ["JO", 30],
  ["KW", 30],
  ["KZ", 20],
  ["LB", 28],
  ["LC", 32],
  ["LI", 21],
  ["LT", 20],
  ["LU", 20],
  ["LV", 21],
  ["MC", 27],
  ["MD", 24],
  ["ME", 22],
  ["MK", 19],
  ["MR", 27],
  ["MT", 31],
  ["MU", 30],
  ["NL", 18],
  ["NO", 15],
  ["PK", 24],
  ["PL", 28],
  ["PS", 29],
  ["PT", 25],
  ["QA", 29],
  ["RO", 24],
  ["RS", 22],
  ["SA", 24],
  ["SC", 31],
  ["SE", 24],
  ["SI", 19],
  ["SK", 24],
  ["SM", 27],
  ["ST", 25],
  ["SV", 28],
  ["TL", 23],
  ["TN", 24],
  ["TR", 26],
  ["UA", 29],
  ["VA", 22],
  ["VG", 24],
  ["XK", 20],
]);

/** ISO 7064 MOD 97-10 over an IBAN without spaces: 1 for a valid one. */
export function ibanMod97(iban: string): number {
  const moved = iban.slice(4) + iban.slice(0, 4);
  let r = 0;
  for (let i = 0; i < moved.length; i++) {
    const c = moved.charCodeAt(i);
    r = isDigit(c) ? (r * 10 + (c - 48)) % 97 : (r * 100 + (c - 55)) % 97;
  }
  return r;
}

function isIbanChar(c: number): boolean {
  return isDigit(c) || isUpper(c);
}

/**
 * The end of an IBAN of `length` characters at `start`, compact or grouped in fours by single spaces, with
 * nothing glued after it; or `null`.
 */
function readIban(text: string, start: number, length: number): { end: number; compact: string } | null {
  // Compact.
  let p = start;
  while (p < start + length && p < text.length && isIbanChar(text.charCodeAt(p))) p++;
  if (p === start + length && !isAlnum(text.charCodeAt(p))) return { end: p, compact: text.slice(start, p) };
  // Grouped in fours.
  let compact = "";
  p = start;
  while (compact.length < length) {
    if (compact.length > 0 && compact.length % 4 === 0) {
      if (text[p] !== " ") return null;
      p++;
    }
    const c = text.charCodeAt(p);
    if (!isIbanChar(c)) return null;
    compact += text[p];
    p++;
  }
  if (isAlnum(text.charCodeAt(p))) return null;
  return { end: p, compact };
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  let i = 0;
  while (i + 4 <= n) {
    const starts = isUpper(text.charCodeAt(i)) && isUpper(text.charCodeAt(i + 1)) &&
      isDigit(text.charCodeAt(i + 2)) && isDigit(text.charCodeAt(i + 3)) &&
      (i === 0 || !isAlnum(text.charCodeAt(i - 1)));
    const length = starts ? IBAN_LENGTHS.get(text.slice(i, i + 2)) : undefined;
    if (length === undefined) {
      i++;
      continue;
    }
    const check = Number(text.slice(i + 2, i + 4));
    const read = check >= 2 && check <= 98 ? readIban(text, i, length) : null;
    if (read && ibanMod97(read.compact) === 1) {
      out.push({ type: "IBAN", start: i, end: read.end });
      i = read.end;
    } else i++;
  }
  return out;
}

/** The IBAN recognizer. */
export const iban: Recognizer = { type: "IBAN", find };
