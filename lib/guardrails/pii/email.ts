/**
 * EMAIL: practical e-mail addresses, `local@domain.tld`.
 *
 * What matches: a local part of ASCII letters, digits and `. _ % + -` (no leading, trailing or doubled dot; at
 * most 64 characters, RFC 5321's limit), `@`, and a domain of at least two dot-separated labels (letters, digits,
 * inner hyphens, at most 63 characters each, 253 in all) whose last label (the TLD) is 2+ letters or an IDN
 * `xn--` label. Quoted local parts, IP-literal domains (`user@[10.0.0.1]`) and Unicode addresses are not
 * matched: they are rare in text, and the practical form is what people paste.
 *
 * What does not, to keep false positives low: `user@localhost` (one label), `@mentions` (no local part),
 * package specs (`lodash@4.17.21`, `@babel/core@7.22.0`: the TLD is not letters), file names
 * (`icon@2x.png`: a file extension that is not a TLD is refused as one), a piece of a longer token
 * (`müller@…` is not matched as `ller@…`; `a@b.com@c.com` is not matched), and logins rather than mailboxes:
 * URL user info (`ssh://git@github.com/…`, `https://user:pw@host.com`) and SSH/scp remotes
 * (`git@github.com:owner/repo.git`). Those are a user name at a host, not a person's address, and masking them
 * would break the commands and configs they stand in.
 *
 * Cost: the scan jumps from `@` to `@`; each expands at most 64 characters left and 254 right, and an expansion
 * stops at the next `@`, so the whole scan is linear.
 *
 * @module
 */

import type { Finding, Recognizer } from "../types.ts";
import { isAlnum, isLower, isUpper, isWordAt } from "./scan.ts";

const LOCAL_MAX = 64;
const DOMAIN_MAX = 253;
const LABEL_MAX = 63;
/**
 * File extensions that are not TLDs: `icon@2x.png`, `chunk@1.2.js`, `logo@3x.webp` are file names. Extensions
 * that are TLDs too (`.md`, `.py`, `.rs`, `.sh`, `.zip`) are not listed: those addresses exist.
 */
const FILE_EXTENSIONS = new Set([
  "png",
  "jpg",
  "jpeg",
  "gif",
  "svg",
  "webp",
  "ico",
  "bmp",
  "avif",
  "js",
  "mjs",
  "cjs",
  "ts",
  "tsx",
  "jsx",
  "json",
  "css",
  "scss",
  "html",
  "htm",
  "txt",
  "yaml",
  "yml",
  "toml",
  "lock",
  "map",
  "wasm",
  "tgz",
]);
/** How far back from a local part to look for the `://` of a URL's user info. */
const USERINFO_LOOKBACK = 256;

function isLocalChar(c: number): boolean {
  // . _ % + -
  return isAlnum(c) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;
}

function isDomainChar(c: number): boolean {
  return isAlnum(c) || c === 46 || c === 45;
}

/** Whether `local` is a dot-atom: no empty part between dots. */
function validLocal(local: string): boolean {
  return local.length > 0 && local[0] !== "." && local[local.length - 1] !== "." && !local.includes("..");
}

/** Whether `domain` has 2+ labels, each well-formed, and a TLD of letters (or `xn--…`). */
function validDomain(domain: string): boolean {
  if (domain.length === 0 || domain.length > DOMAIN_MAX) return false;
  const labels = domain.split(".");
  if (labels.length < 2) return false;
  for (const label of labels) {
    if (label.length === 0 || label.length > LABEL_MAX) return false;
    if (label[0] === "-" || label[label.length - 1] === "-") return false;
  }
  const tld = labels[labels.length - 1];
  if (FILE_EXTENSIONS.has(tld.toLowerCase())) return false;
  if (/^xn--[a-z0-9-]+$/i.test(tld)) return true;
  if (tld.length < 2) return false;
  for (let i = 0; i < tld.length; i++) {
    const c = tld.charCodeAt(i);
    if (!isUpper(c) && !isLower(c)) return false;
  }
  return true;
}

/** Whether the local part at `start` is a URL's user info (`scheme://user@`, `scheme://user:pw@`). */
function inUserInfo(text: string, start: number): boolean {
  let k = start;
  const floor = Math.max(0, start - USERINFO_LOOKBACK);
  while (k > floor && !/[\s/@<>"'()[\]]/.test(text[k - 1])) k--;
  return k >= 3 && text.startsWith("://", k - 3);
}

function find(text: string): Finding[] {
  const out: Finding[] = [];
  const n = text.length;
  for (let at = text.indexOf("@"); at !== -1; at = text.indexOf("@", at + 1)) {
    let start = at;
    while (start > 0 && at - start <= LOCAL_MAX && isLocalChar(text.charCodeAt(start - 1))) start--;
    if (at - start > LOCAL_MAX) continue;
    while (start < at && text[start] === ".") start++; // an ellipsis before the address
    const local = text.slice(start, at);
    if (!validLocal(local)) continue;
    if (start > 0 && (isWordAt(text, start - 1) || text[start - 1] === "@")) continue;
    let end = at + 1;
    while (end < n && end - at <= DOMAIN_MAX + 1 && isDomainChar(text.charCodeAt(end))) end++;
    if (end - at > DOMAIN_MAX + 1) continue;
    while (end > at + 1 && (text[end - 1] === "." || text[end - 1] === "-")) end--; // sentence punctuation
    if (!validDomain(text.slice(at + 1, end))) continue;
    if (end < n && (isWordAt(text, end) || text[end] === "@")) continue;
    if (text[end] === ":" && end + 1 < n && !/\s/.test(text[end + 1])) continue; // git@host:owner/repo
    if (inUserInfo(text, start)) continue;
    out.push({ type: "EMAIL", start, end });
  }
  return out;
}

/** The EMAIL recognizer. */
export const email: Recognizer = { type: "EMAIL", find };
