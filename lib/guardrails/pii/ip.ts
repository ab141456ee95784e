/**
 * IP_ADDRESS: IPv4 dotted quads and IPv6 addresses.
 *
 * The scan reads maximal runs of the characters addresses are made of (`0-9 a-f A-F : .`) and decides on each
 * run, so an address is never a piece of a longer dotted or coloned number.
 *
 * IPv4: exactly four decimal octets of 0–255, without leading zeros (`010` is octal to some parsers and a
 * zero-padded id to people); `1.2.3.4.5` is not one, nor `v1.2.3.4` (glued to a letter). After a colon, the
 * run's IPv4 pieces are tried one by one (`10.0.0.1:8080`, `host:10.0.0.1`).
 *
 * IPv6: eight groups of 1–4 hex digits, or fewer with exactly one `::`, optionally ending in an IPv4 quad
 * (`::ffff:192.0.2.1`, counting as two groups). The confidence rule: it must hold a decimal digit, so that
 * `a::b` or `dead::beef` in code (C++ scopes, Rust paths, made-up words) are not addresses; `::` alone is not
 * one either. Zone ids (`%eth0`) are left outside the match. Times (`12:30:45`) and MAC addresses (six groups)
 * fail the group count.
 *
 * Cost: each character is read once; runs longer than any address are skipped whole.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isDigit, isWordAt } from "./scan.ts";

/** Longest run decided on: an IPv6 address with an IPv4 tail is at most 45 characters; plus a port. */
const MAX_RUN = 64;

function isRunChar(c: number): boolean {
  return isDigit(c) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70) || c === 58 || c === 46;
}

/** Whether `s` is a dotted-quad IPv4 address. */
export function isIpv4(s: string): boolean {
  const parts = s.split(".");
  if (parts.length !== 4) return false;
  return parts.every((p) =>
    p.length >= 1 && p.length <= 3 && /^[0-9]+$/.test(p) && (p === "0" || p[0] !== "0") && Number(p) <= 255
  );
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** How many 16-bit groups a `:`-separated list stands for, or -1 if one is malformed. */
function groupCount(list: string, last: boolean): number {
  if (list === "") return 0;
  const groups = list.split(":");
  let count = 0;
  for (let i = 0; i < groups.length; i++) {
    const g = groups[i];
    if (last && i === groups.length - 1 && g.includes(".")) {
      if (!isIpv4(g)) return -1;
      count += 2;
    } else if (HEX_GROUP.test(g)) count++;
    else return -1;
  }
  return count;
}

/** Whether `s` is an IPv6 address, full or `::`-compressed, holding a decimal digit. */
export function isIpv6(s: string): boolean {
  if (!/[0-9]/.test(s) || s.includes(":::")) return false;
  const halves = s.split("::");
  if (halves.length > 2) return false;
  if (halves.length === 1) return groupCount(s, true) === 8;
  const left = groupCount(halves[0], false), right = groupCount(halves[1], true);
  return left >= 0 && right >= 0 && left + right <= 7;
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    if (!isRunChar(text.charCodeAt(i))) {
      i++;
      continue;
    }
    let runEnd = i, digit = false;
    for (; runEnd < n && isRunChar(text.charCodeAt(runEnd)); runEnd++) {
      digit ||= isDigit(text.charCodeAt(runEnd));
    }
    const runStart = i;
    i = runEnd;
    if (!digit || runEnd - runStart > MAX_RUN) continue; // every address has a decimal digit
    let start = runStart, end = runEnd;
    while (end > start && text[end - 1] === ".") end--; // sentence punctuation
    if (text[end - 1] === ":" && text[end - 2] !== ":") end--; // "10.0.0.1: …", "10.0.0.1:http"
    if (text[start] === ":" && text[start + 1] !== ":") start++; // "IP:10.0.0.1"
    // Glued to a word on the left (`v1.2.3.4`) or right (`1.2.3.4.txt`), unless a colon stands between.
    const leftOk = start > runStart || !isWordAt(text, runStart - 1);
    const rightOk = text[end] === ":" || !isWordAt(text, runEnd);
    const run = text.slice(start, end);
    if (leftOk && rightOk && (run.includes(":") ? isIpv6(run) : isIpv4(run))) {
      out.push({ type: "IP_ADDRESS", start, end });
      continue;
    }
    if (!run.includes(":")) continue;
    const pieces = run.split(":");
    let at = start;
    pieces.forEach((piece, k) => {
      const edgeOk = (k > 0 || leftOk) && (k < pieces.length - 1 || rightOk);
      if (edgeOk && isIpv4(piece)) out.push({ type: "IP_ADDRESS", start: at, end: at + piece.length });
      at += piece.length + 1;
    });
  }
  return out;
}

/** The IP_ADDRESS recognizer. */
export const ip: Recognizer = { type: "IP_ADDRESS", find };
