/**
 * PHONE: telephone numbers, international (`+<country code> …`, E.164) and national forms with separators.
 *
 * A candidate is a maximal run of digit groups joined by one separator each (space, `-`, `.`), where a group
 * may be parenthesised (`(415)`, `+44 (0)20`) and a run may start with `+`. Runs are taken whole and never
 * cut: `415 555 2671 2` is one run, not a phone (rare in text, and cutting runs is what makes id fragments
 * look like phones).
 *
 * International (`+`): 7–15 digits (E.164), the country code 1–3 digits not starting with 0, later groups of
 * any size but at most one single digit group (`+33 1 23 45 67 89`). Written without separators
 * (`+14155552671`) it needs 10–15 digits, as `+1234567` is as often a count as a number.
 *
 * National (no `+`): needs separators (a bare digit run is an order id or a timestamp as often as a number),
 * 9–12 digits (8 only as `dd dd dd dd`, the Nordic form), groups of 2–6 digits (first 2–5), up to 6 groups;
 * NANP's leading `1` (`1-800-555-0199`) is allowed. Shapes of other things are refused: SSNs (`3-2-4`), dotted
 * quads (IPs, versions), dates (`2026-11-29`, `29.11.2026`, `2026 11 29`), thousands grouped by dots, runs
 * mixing `-` with `.`, card/tracking groups (`1234 5678 9012`, unless it starts with a trunk `0`), ZIP+4
 * (`94105-1234`) and thousands grouped by spaces (`123 456 789`; Spain's `912 345 678` is kept).
 *
 * Around the run: nothing glued on either side (`ORD-2026-000123`, `v10.15.3`, `12:30`, `$1 234`, `…/2`); see
 * {@link numberStartsAt} and {@link numberEndsAt}.
 *
 * Cost: each character is read once by the run scanner, and the scan resumes after the run.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isDigit, isDigitAt, numberEndsAt, numberStartsAt } from "./scan.ts";

interface Group {
  /** The group's digits. */
  readonly digits: string;
  readonly paren: boolean;
  /** The separator before it: `""` (none, after a `(…)` group), `" "`, `"-"`, `"."`. */
  readonly sep: string;
}

interface Run {
  readonly start: number;
  readonly end: number;
  readonly plus: boolean;
  readonly groups: readonly Group[];
  /** Longer than any phone number: skipped whole. */
  readonly tooLong: boolean;
}

const MAX_GROUPS = 8;
const MAX_DIGITS = 15;

/** Reads the run starting at `start` (a digit, `+` or `(`). */
function readRun(text: string, start: number): Run {
  const n = text.length;
  let p = start;
  const plus = text[p] === "+";
  if (plus) p++;
  const groups: Group[] = [];
  let digitCount = 0;
  let tooLong = false;
  let end = start;
  let sep = "";
  while (p < n) {
    let q = p;
    const paren = text[q] === "(";
    if (paren) q++;
    const d0 = q;
    while (q < n && isDigit(text.charCodeAt(q))) q++;
    const dEnd = q;
    if (dEnd === d0) break;
    if (paren) {
      if (text[q] !== ")") break;
      q++;
    }
    digitCount += dEnd - d0;
    if (groups.length >= MAX_GROUPS || digitCount > MAX_DIGITS) tooLong = true;
    else groups.push({ digits: text.slice(d0, dEnd), paren, sep });
    end = q;
    p = q;
    const s = text[p];
    const next = text[p + 1];
    if ((s === " " || s === "-" || s === ".") && (isDigitAt(text, p + 1) || next === "(")) {
      sep = s;
      p++;
    } else if ((paren && isDigitAt(text, p)) || (s === "(" && isDigitAt(text, p + 1))) {
      sep = "";
    } else break;
  }
  return { start, end, plus, groups, tooLong };
}

function lengths(groups: readonly Group[]): string {
  return groups.map((g) => g.digits.length).join(",");
}

function totalDigits(groups: readonly Group[]): number {
  let t = 0;
  for (const g of groups) t += g.digits.length;
  return t;
}

/** Whether the separators mix `-` and `.`, or `.` with anything else. */
function mixedSeparators(groups: readonly Group[]): boolean {
  const seps = new Set(groups.slice(1).map((g) => g.sep).filter((s) => s !== ""));
  return seps.has(".") && seps.size > 1;
}

function isYear(s: string): boolean {
  return s.length === 4 && (s.startsWith("19") || s.startsWith("20"));
}

function inRange(s: string, lo: number, hi: number): boolean {
  const v = Number(s);
  return s.length === 2 && v >= lo && v <= hi;
}

/** `yyyy mm dd …` or `dd mm yyyy …`, with any separators. */
function looksLikeDate(d: readonly string[]): boolean {
  if (d.length < 3) return false;
  if (isYear(d[0]) && inRange(d[1], 1, 12) && inRange(d[2], 1, 31)) return true;
  return inRange(d[0], 1, 31) && inRange(d[1], 1, 31) && isYear(d[2]);
}

function validInternational(groups: readonly Group[], hasSeparators: boolean): boolean {
  const total = totalDigits(groups);
  if (groups[0].paren || groups[0].digits[0] === "0") return false;
  if (!hasSeparators) return total >= 10 && total <= MAX_DIGITS;
  if (total < 7 || total > MAX_DIGITS || groups[0].digits.length > 3) return false;
  let singles = 0;
  for (let i = 1; i < groups.length; i++) {
    const g = groups[i];
    if (g.paren && i !== 1) return false;
    if (g.digits.length === 1 && !(g.paren && g.digits === "0")) singles++;
  }
  return singles <= 1;
}

function validNational(groups: readonly Group[]): boolean {
  const d = groups.map((g) => g.digits);
  const total = totalDigits(groups);
  const shape = lengths(groups);
  if (groups.length < 2 || groups.length > 6) return false;
  // NANP with its leading 1: 1-800-555-0199, 1 (800) 555-0199.
  if (d[0] === "1" && !groups[0].paren && shape === "1,3,3,4") return groups.slice(2).every((g) => !g.paren);
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i];
    if (g.paren && i !== 0) return false;
    const len = g.digits.length;
    if (len < 2 || len > (i === 0 ? 5 : 6)) return false;
  }
  if (total === 8) {
    if (shape !== "2,2,2,2") return false;
  } else if (total < 9 || total > 12) return false;
  if (shape === "3,2,4") return false; // a US SSN
  const seps = groups.slice(1).map((g) => g.sep);
  const dotted = seps.every((s) => s === ".");
  if (dotted && groups.length === 4 && d.every((x) => x.length <= 3)) return false; // IP, version
  if (dotted && groups.length >= 3 && d.slice(1).every((x) => x.length === 3)) return false; // 12.345.678.901
  if (looksLikeDate(d)) return false;
  if (shape === "5,4") return false; // a US ZIP+4
  // Thousands grouped by spaces (`123 456 789`), except a trunk `0` or a Spanish `[6-9]xx xxx xxx`.
  const thousands = groups.length >= 3 && d[0].length <= 3 && d.slice(1).every((x) => x.length === 3);
  if (thousands && d[0][0] !== "0" && !(shape === "3,3,3" && /^[6-9]/.test(d[0]))) return false;
  if (groups.length >= 3 && d.every((x) => x.length === 4) && d[0][0] !== "0") return false; // card, tracking
  return true;
}

function valid(run: Run, text: string): boolean {
  if (run.tooLong || run.groups.length === 0) return false;
  if (!numberStartsAt(text, run.start) || !numberEndsAt(text, run.end)) return false;
  if (mixedSeparators(run.groups)) return false;
  if (run.plus) return validInternational(run.groups, run.groups.length > 1);
  return validNational(run.groups);
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text[i];
    const starts = isDigitAt(text, i) ||
      ((c === "+" || c === "(") &&
        (isDigitAt(text, i + 1) || (text[i + 1] === "(" && isDigitAt(text, i + 2))));
    if (!starts) {
      i++;
      continue;
    }
    const run = readRun(text, i);
    if (valid(run, text)) out.push({ type: "PHONE", start: run.start, end: run.end });
    i = Math.max(run.end, i + 1);
  }
  return out;
}

/** The PHONE recognizer. */
export const phone: Recognizer = { type: "PHONE", find };
