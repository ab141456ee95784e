/**
 * CREDIT_CARD: payment card numbers (PANs).
 *
 * A match is 13–19 digits, bare or grouped by single spaces or single dashes (one kind per number) in the
 * printed groupings: fours with a shorter last group (`4111 1111 1111 1111`, `4222 2222 2222 2`,
 * `6011 0000 0000 0000 004`) or Amex/Diners' 4-6-5 and 4-6-4. The confidence rule is the brand's: the number
 * must start with a known issuer prefix (IIN), have a length that brand issues, and pass the Luhn check. A
 * random 16-digit id passes Luhn one time in ten and a brand prefix and length far less often together; any
 * number failing Luhn is never a card.
 *
 * Brands: Visa `4` (13, 16, 19), Mastercard `51`–`55` and `2221`–`2720` (16), Amex `34`, `37` (15), Discover
 * `6011`, `644`–`649`, `65` (16–19), JCB `3528`–`3589` (16–19), Diners `300`–`305`, `3095`, `36`, `38`, `39`
 * (14–19), UnionPay `62` (16–19).
 *
 * A run of digit groups is taken whole; when it is not a card, the run without its first or last
 * space-separated group is tried (`4111 1111 1111 1111 12/28`: the expiry's month follows the number). Nothing
 * may be glued to the number (see {@link numberStartsAt}), so `abc4111111111111111def` and `ORD-4111…` are not
 * cards: they are tokens of a longer id.
 *
 * Cost: one pass over each run, at most four checks of at most 19 digits per run.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isDigit, isDigitAt, numberEndsAt, numberStartsAt } from "./scan.ts";

interface Group {
  readonly start: number;
  readonly end: number;
  /** The separator after it (`" "`, `"-"`), or `""` for the last. */
  readonly sep: string;
}

const MAX_GROUPS = 7;
const MAX_DIGITS = 24;

/** The Luhn check over a string of digits. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let v = digits.charCodeAt(i) - 48;
    if (double) {
      v *= 2;
      if (v > 9) v -= 9;
    }
    sum += v;
    double = !double;
  }
  return sum % 10 === 0;
}

function between(prefix: string, lo: number, hi: number): boolean {
  const v = Number(prefix);
  return v >= lo && v <= hi;
}

/** Whether `digits` starts with a known brand's prefix and has a length that brand issues. */
export function brandFits(digits: string): boolean {
  const n = digits.length;
  const p2 = digits.slice(0, 2), p3 = digits.slice(0, 3), p4 = digits.slice(0, 4);
  if (digits[0] === "4") return n === 13 || n === 16 || n === 19;
  if (between(p2, 51, 55) || between(p4, 2221, 2720)) return n === 16;
  if (p2 === "34" || p2 === "37") return n === 15;
  if (p4 === "6011" || p2 === "65" || between(p3, 644, 649)) return n >= 16 && n <= 19;
  if (between(p4, 3528, 3589)) return n >= 16 && n <= 19;
  if (between(p3, 300, 305) || p4 === "3095" || p2 === "36" || p2 === "38" || p2 === "39") {
    return n >= 14 && n <= 19;
  }
  if (p2 === "62") return n >= 16 && n <= 19;
  return false;
}

/** Whether the group sizes are a printed card grouping (or a single bare run). */
function groupingFits(sizes: readonly number[]): boolean {
  if (sizes.length === 1) return true;
  const shape = sizes.join(",");
  if (shape === "4,6,5" || shape === "4,6,4") return true;
  const last = sizes[sizes.length - 1];
  return sizes.length >= 3 && sizes.slice(0, -1).every((s) => s === 4) && last >= 1 && last <= 4;
}

/** Whether `groups[from..to)` is a card number standing on its own. */
function cardAt(text: string, groups: readonly Group[], from: number, to: number): boolean {
  const part = groups.slice(from, to);
  const seps = new Set(part.slice(0, -1).map((g) => g.sep));
  if (seps.size > 1) return false;
  const digits = part.map((g) => text.slice(g.start, g.end)).join("");
  if (digits.length < 13 || digits.length > 19) return false;
  if (!groupingFits(part.map((g) => g.end - g.start))) return false;
  if (!numberStartsAt(text, part[0].start) || !numberEndsAt(text, part[part.length - 1].end)) return false;
  return brandFits(digits) && luhnValid(digits);
}

/** The groups of the run of digits starting at `start`, and where it ends; `null` groups when too long. */
function readRun(text: string, start: number): { groups: Group[] | null; end: number } {
  const n = text.length;
  const groups: Group[] = [];
  let p = start, digits = 0, tooLong = false;
  while (true) {
    const g0 = p;
    while (p < n && isDigit(text.charCodeAt(p))) p++;
    digits += p - g0;
    const s = text[p];
    const joined = (s === " " || s === "-") && isDigitAt(text, p + 1);
    if (groups.length >= MAX_GROUPS || digits > MAX_DIGITS) tooLong = true;
    else groups.push({ start: g0, end: p, sep: joined ? s : "" });
    if (!joined) return { groups: tooLong ? null : groups, end: p };
    p++;
  }
}

function digitsIn(groups: readonly Group[]): number {
  let n = 0;
  for (const g of groups) n += g.end - g.start;
  return n;
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (!isDigit(text.charCodeAt(i))) {
      i++;
      continue;
    }
    const { groups, end } = readRun(text, i);
    i = end;
    if (groups === null || digitsIn(groups) < 13) continue;
    const k = groups.length;
    const spaceAfterFirst = k > 1 && groups[0].sep === " ";
    const spaceBeforeLast = k > 1 && groups[k - 2].sep === " ";
    const tries: [number, number][] = [[0, k]];
    if (spaceBeforeLast) tries.push([0, k - 1]);
    if (spaceAfterFirst) tries.push([1, k]);
    if (spaceAfterFirst && spaceBeforeLast && k > 2) tries.push([1, k - 1]);
    const hit = tries.find(([from, to]) => cardAt(text, groups, from, to));
    if (hit) out.push({ type: "CREDIT_CARD", start: groups[hit[0]].start, end: groups[hit[1] - 1].end });
  }
  return out;
}

/** The CREDIT_CARD recognizer. */
export const card: Recognizer = { type: "CREDIT_CARD", find };
