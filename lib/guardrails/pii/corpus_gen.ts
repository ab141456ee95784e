/**
 * Generators for the recognizers' test corpus: a seeded random source, so the corpus is the same on every run,
 * and the builders of well-formed fake values (Luhn-completed card numbers, IBANs with computed check digits,
 * keys of the right shape). Every value is generated; none is anyone's.
 *
 * @module
 */

import { luhnValid } from "./card.ts";
import { ibanMod97 } from "./iban.ts";

/** One corpus sample: a sentence and the value in it the recognizer must find, exactly. */
export interface Case {
  readonly text: string;
  readonly value: string;
}

/** A recognizer's corpus: true matches and look-alikes (sentences where it must find nothing). */
export interface Corpus {
  readonly matches: readonly Case[];
  readonly lookalikes: readonly string[];
}

/** A small deterministic xorshift random source: `next()` in [0, 1). */
export function random(seed: number): { next(): number; int(lo: number, hi: number): number } {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x1_0000_0000;
  };
  return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) };
}

export const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export const BASE64URL = BASE62 + "-_";
export const BASE64 = BASE62 + "+/";
export const BASE32_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** A random string of `length` characters of `alphabet`. */
export function randomString(rng: ReturnType<typeof random>, alphabet: string, length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) s += alphabet[rng.int(0, alphabet.length - 1)];
  return s;
}

/** `prefix` completed with random digits and a Luhn check digit to `length` digits. */
export function luhnNumber(rng: ReturnType<typeof random>, prefix: string, length: number): string {
  let body = prefix;
  while (body.length < length - 1) body += String(rng.int(0, 9));
  for (let d = 0; d <= 9; d++) if (luhnValid(body + d)) return body + d;
  throw new Error("unreachable");
}

/** The same number with its last digit changed, so the Luhn check fails. */
export function breakLuhn(n: string): string {
  const last = (Number(n[n.length - 1]) + 3) % 10;
  return n.slice(0, -1) + last;
}

/** Groups a compact value in fours with `sep`, as cards and IBANs are printed. */
export function fours(s: string, sep = " "): string {
  return s.replace(/(.{4})(?=.)/g, `$1${sep}`);
}

/** An IBAN of `country` with a random BBAN of `length` - 4 characters (digits, or `bank` letters first). */
export function makeIban(rng: ReturnType<typeof random>, country: string, length: number, bank = ""): string {
  const bban = bank + randomString(rng, "0123456789", length - 4 - bank.length);
  const base = ibanMod97(`${country}00${bban}`);
  const check = String(98 - base).padStart(2, "0");
  return `${country}${check}${bban}`;
}

/** The same IBAN with one BBAN digit changed, so MOD 97 fails. */
export function breakIban(iban: string): string {
  const i = iban.search(/[0-9](?=[0-9]*$)/);
  const d = (Number(iban[i]) + 1) % 10;
  return iban.slice(0, i) + d + iban.slice(i + 1);
}

/** Base64url without padding, of a UTF-8 string. */
export function b64url(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** Sentences a value is embedded in, chosen by index so the corpus is varied and stable. */
const TEMPLATES: readonly ((v: string) => string)[] = [
  (v) => `Please use ${v} for this.`,
  (v) => `${v}`,
  (v) => `value: ${v}`,
  (v) => `He wrote "${v}" on the form.`,
  (v) => `(${v})`,
  (v) => `- ${v}\n- next item`,
  (v) => `field=${v}&next=1`,
  (v) => `Here it is: ${v}. Thanks!`,
  (v) => `{"data": "${v}"}`,
  (v) => `see <${v}> and reply`,
];

/** A case with `value` in the `i`th template. */
export function embed(value: string, i: number): Case {
  return { text: TEMPLATES[i % TEMPLATES.length](value), value };
}

/** Look-alike sentences: each value in the `i`th template. */
export function embedAll(values: readonly string[]): string[] {
  return values.map((v, i) => TEMPLATES[i % TEMPLATES.length](v));
}
