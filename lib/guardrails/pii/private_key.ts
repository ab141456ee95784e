/**
 * PRIVATE_KEY: PEM (RFC 7468) and OpenPGP armored private keys, from the `-----BEGIN … PRIVATE KEY-----` line
 * through the matching `-----END … PRIVATE KEY-----` line; when the END line is missing (a truncated paste, a
 * stream cut short), through the end of the text, so no part of the key is left unmasked.
 *
 * Labels: any upper-case words before `PRIVATE KEY` (`RSA`, `EC`, `DSA`, `OPENSSH`, `ENCRYPTED`, none), and
 * `PGP PRIVATE KEY BLOCK`. Public keys and certificates are not matched.
 *
 * The confidence rule: the BEGIN line must be followed by key material, at least 64 base64 characters before
 * anything else (after optional `Name: value` header lines such as `Proc-Type`, `DEK-Info`, `Version`). A
 * document that only names the header (`the file starts with -----BEGIN PRIVATE KEY-----`) or shows a
 * placeholder body (`...`) is not a key, and would otherwise be masked to the end of the text.
 *
 * On a stream (holdback.ts) a key is longer than the window: `long.unfinished` reports a BEGIN line whose END
 * has not come yet (with key material, or too little text after it to tell), so the stream holds the key until
 * its END line and masks it whole; `long.rest` finds the END line in the text that continues a key cut at the
 * stream's cap.
 *
 * Cost: the label is bounded (40 characters), the material check reads at most a few hundred characters, and
 * the END search resumes where the last one stopped; once no END is found the match runs to the end and the
 * scan stops.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";

const BEGIN = /-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----/g;
const END = /-----END (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----/g;
/** Base64 characters a key's body must start with. */
const MIN_MATERIAL = 64;
/** Header lines (`Proc-Type: 4,ENCRYPTED`) skipped before the material, at most this many of this length. */
const MAX_HEADERS = 6;
const MAX_HEADER_LINE = 200;

function isBase64(c: string): boolean {
  return /[A-Za-z0-9+/=]/.test(c);
}

/** A header line the text's end may have cut: a name, perhaps its `: ` and some of its value. */
const HEADER_START = /^[A-Za-z][A-Za-z0-9-]*(?::(?: .*)?)?$/;

/**
 * Whether key material follows the BEGIN line ending at `from`: `"yes"`, `"no"`, or `"short"` when the text
 * ends before that is known (fewer than 64 base64 characters yet, or in what may be a header line).
 */
function material(text: string, from: number): "yes" | "no" | "short" {
  let p = from;
  let cutHeader = false;
  for (let h = 0; h < MAX_HEADERS; h++) {
    while (p < text.length && /\s/.test(text[p])) p++;
    const head = text.slice(p, p + MAX_HEADER_LINE + 1);
    const lineEnd = head.indexOf("\n");
    if (lineEnd === -1) {
      cutHeader = p + head.length === text.length && HEADER_START.test(head);
      break;
    }
    const line = head.slice(0, lineEnd);
    if (!/^[A-Za-z][A-Za-z0-9-]*: /.test(line)) break;
    p += line.length;
  }
  let count = 0;
  for (; p < text.length && count < MIN_MATERIAL; p++) {
    const c = text[p];
    if (isBase64(c)) count++;
    else if (!/\s/.test(c)) return cutHeader ? "short" : "no";
  }
  return count >= MIN_MATERIAL ? "yes" : "short";
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const begin = new RegExp(BEGIN.source, "g");
  const end = new RegExp(END.source, "g");
  for (let m = begin.exec(text); m !== null; m = begin.exec(text)) {
    const start = m.index;
    const afterBegin = start + m[0].length;
    if (material(text, afterBegin) !== "yes") continue;
    end.lastIndex = afterBegin;
    const e = end.exec(text);
    if (e === null) {
      out.push({ type: "PRIVATE_KEY", start, end: text.length });
      break;
    }
    const stop = e.index + e[0].length;
    out.push({ type: "PRIVATE_KEY", start, end: stop });
    begin.lastIndex = stop;
  }
  return out;
}

/** Where a key begins whose END line is not in `text` (with material, or too little text to tell), or -1. */
function unfinished(text: string): number {
  const begin = new RegExp(BEGIN.source, "g");
  const end = new RegExp(END.source, "g");
  for (let m = begin.exec(text); m !== null; m = begin.exec(text)) {
    const afterBegin = m.index + m[0].length;
    if (material(text, afterBegin) === "no") continue;
    end.lastIndex = afterBegin;
    const e = end.exec(text);
    if (e === null) return m.index;
    begin.lastIndex = e.index + e[0].length;
  }
  return -1;
}

/** What may be the start of an END line at the end of a text (`-`, `-----EN`, `-----END RSA PRIV`…). */
const END_START = /-{1,5}(?:E(?:N(?:D(?: [A-Z0-9 ]{0,110}-{0,4})?)?)?)?$/;

/** Through the END line in `text`, which continues a key; before it comes, all but what may start it. */
function rest(text: string): { end: number; ended: boolean } {
  const e = new RegExp(END.source, "g").exec(text);
  if (e !== null) return { end: e.index + e[0].length, ended: true };
  const tail = text.slice(-130); // longer than any END line, so the search is bounded
  const partial = END_START.exec(tail);
  return { end: partial === null ? text.length : text.length - tail.length + partial.index, ended: false };
}

/** The PRIVATE_KEY recognizer. */
export const privateKey: Recognizer = { type: "PRIVATE_KEY", find, long: { unfinished, rest } };
