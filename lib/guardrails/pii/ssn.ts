/**
 * US_SSN: US Social Security numbers, `AAA-GG-SSSS` or `AAA GG SSSS` (one separator kind per number).
 *
 * The confidence rule is the SSA's assignment rules: the area is not 000, 666 or 900–999; the group is not 00;
 * the serial is not 0000; and the numbers known to be invalid because they were printed in advertising
 * (078-05-1120, the Woolworth wallet card; 219-09-9999, the SSA's own leaflet) are refused. `123-45-6789` is
 * valid by those rules and is matched: a prompt that holds it may well be holding a real one.
 *
 * Nine bare digits are never an SSN here: without the separators they are as likely a ZIP+4, a phone without
 * its area code, an order id or an amount, and the rules above cut only about a tenth of them. The space form
 * is matched only when no further digit group is next to it (`12 123 45 6789` is a list of numbers), and
 * nothing may be glued to either end (see {@link numberStartsAt}).
 *
 * Cost: a fixed 11-character check at each digit that can start a number.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isDigit, isDigitAt, numberEndsAt, numberStartsAt } from "./scan.ts";

/** Numbers valid by the rules that are known not to be anyone's. */
const ADVERTISED = new Set(["078051120", "219099999"]);

/** Whether nine digits are an assignable SSN. */
export function ssnValid(digits: string): boolean {
  const area = Number(digits.slice(0, 3));
  if (area === 0 || area === 666 || area >= 900) return false;
  if (digits.slice(3, 5) === "00" || digits.slice(5) === "0000") return false;
  return !ADVERTISED.has(digits);
}

function digitsAt(text: string, from: number, count: number): boolean {
  for (let i = from; i < from + count; i++) if (!isDigitAt(text, i)) return false;
  return true;
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  let i = 0;
  while (i + 11 <= n) {
    if (!isDigit(text.charCodeAt(i)) || (i > 0 && isDigitAt(text, i - 1))) {
      i++;
      continue;
    }
    const sep = text[i + 3];
    const shaped = (sep === "-" || sep === " ") && text[i + 6] === sep && digitsAt(text, i, 3) &&
      digitsAt(text, i + 4, 2) && digitsAt(text, i + 7, 4);
    const end = i + 11;
    let ok = shaped && numberStartsAt(text, i) && numberEndsAt(text, end);
    if (ok && sep === " ") {
      ok = !(text[i - 1] === " " && isDigitAt(text, i - 2)) &&
        !(text[end] === " " && isDigitAt(text, end + 1));
    }
    const digits = ok ? text.slice(i, i + 3) + text.slice(i + 4, i + 6) + text.slice(i + 7, end) : "";
    if (ok && ssnValid(digits)) {
      out.push({ type: "US_SSN", start: i, end });
      i = end;
    } else i++;
  }
  return out;
}

/** The US_SSN recognizer. */
export const ssn: Recognizer = { type: "US_SSN", find };
