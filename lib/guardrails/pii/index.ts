/**
 * The built-in PII recognizers (issue 27): their type names, one recognizer per type, and {@link findPii}, which
 * runs the asked ones over a text and resolves their overlaps into one list of findings.
 *
 * Overlaps. Recognizers run independently, so one value can be found twice (a card number is also a run of
 * digits, a JWT's payload may hold something e-mail-like). A masked span must be one placeholder, so findings
 * never overlap in the result: the longest finding wins, and between equally long ones the more specific type
 * (the earlier in {@link PII_TYPES}: a private key before a JWT before an API key … before a phone). A finding
 * that loses is dropped whole, never cut.
 *
 * @module
 */

import type { Finding, LongValues, Recognizer } from "../types.ts";
import { card } from "./card.ts";
import { email } from "./email.ts";
import { iban } from "./iban.ts";
import { ip } from "./ip.ts";
import { jwt } from "./jwt.ts";
import { phone } from "./phone.ts";
import { privateKey } from "./private_key.ts";
import {
  anthropicKey,
  awsAccessKeyId,
  awsSecretAccessKey,
  githubToken,
  googleKey,
  openaiKey,
  slackToken,
} from "./secrets.ts";
import { ssn } from "./ssn.ts";

/** Every built-in recognizer, most specific first: the order breaks ties between overlapping findings. */
const ALL: readonly Recognizer[] = [
  privateKey,
  jwt,
  anthropicKey,
  openaiKey,
  githubToken,
  slackToken,
  googleKey,
  awsAccessKeyId,
  awsSecretAccessKey,
  iban,
  card,
  ssn,
  ip,
  email,
  phone,
];

/** The type names of the built-in recognizers, most specific first: the one source of truth for configs. */
export const PII_TYPES: readonly string[] = ALL.map((r) => r.type);

/** The built-in recognizers by type name. */
export const RECOGNIZERS: ReadonlyMap<string, Recognizer> = new Map(ALL.map((r) => [r.type, r]));

const RANK: ReadonlyMap<string, number> = new Map(PII_TYPES.map((t, i) => [t, i]));

/** A value a stream's text may have cut: where it starts, its type, and what finds where its rest ends. */
export interface UnfinishedValue {
  readonly start: number;
  readonly type: string;
  readonly long: LongValues;
}

/** The recognizers of the given types (all built-in ones when omitted); an unknown type throws. */
function recognizersOf(types: readonly string[] | undefined): readonly Recognizer[] {
  if (types === undefined) return ALL;
  return [
    ...new Set(types.map((t) => {
      const r = RECOGNIZERS.get(t);
      if (r === undefined) throw new RangeError(`unknown PII type: ${t}`);
      return r;
    })),
  ];
}

/**
 * Every finding of the given types (all built-in types when omitted) in `text`, sorted by start, with no two
 * overlapping (see the module's rule). An unknown type name is a programming error (configs are validated
 * against {@link PII_TYPES}), so it throws a `RangeError` rather than silently finding nothing. `keep`, when
 * given, leaves out a finding before overlaps are resolved: a stream's check reads the text it already released
 * as context only (a recognizer's look-behind), and a value found there must not displace one after it.
 */
export function findPii(
  text: string,
  types?: readonly string[],
  keep?: (finding: Finding) => boolean,
): Finding[] {
  const all: Finding[] = [];
  for (const r of recognizersOf(types)) {
    for (const f of r.find(text)) if (keep === undefined || keep(f)) all.push(f);
  }
  if (all.length <= 1) return all;
  return resolveOverlaps(all);
}

/**
 * For a stream: the earliest value of the given types (all when omitted) that the end of `text` may leave
 * unfinished (`Recognizer.long`), with what finds where its rest ends; none when no value is.
 */
export function findUnfinished(text: string, types?: readonly string[]): UnfinishedValue | undefined {
  let found: UnfinishedValue | undefined;
  for (const r of recognizersOf(types)) {
    if (r.long === undefined) continue;
    const start = r.long.unfinished(text);
    if (start !== -1 && (found === undefined || start < found.start)) {
      found = { start, type: r.type, long: r.long };
    }
  }
  return found;
}

/** Keeps the longest (then most specific) of overlapping findings; the rest sorted by start. */
export function resolveOverlaps(findings: readonly Finding[]): Finding[] {
  const preferred = [...findings].sort((a, b) =>
    (b.end - b.start) - (a.end - a.start) || (RANK.get(a.type) ?? 99) - (RANK.get(b.type) ?? 99) ||
    a.start - b.start
  );
  // Accepted findings, sorted by start and disjoint: a new one overlaps only its neighbours in that order.
  const kept: Finding[] = [];
  for (const f of preferred) {
    let lo = 0, hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kept[mid].start < f.start) lo = mid + 1;
      else hi = mid;
    }
    const before = kept[lo - 1], after = kept[lo];
    if (before !== undefined && before.end > f.start) continue;
    if (after !== undefined && after.start < f.end) continue;
    kept.splice(lo, 0, f);
  }
  return kept;
}
