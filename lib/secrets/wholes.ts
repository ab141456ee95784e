/**
 * The strings the scrubber masks whole (every secret, its JSON-escaped form, its base64 and base64url forms),
 * found by the run scan instead of one `indexOf` or `includes` per string.
 *
 * Each secret has up to six encoded forms (three byte alignments × two alphabets), so a config of 12 secrets
 * made `test` call `includes` some 70 times on every log line, about three times the cost of the scan itself,
 * and `scrub` as many `indexOf` passes over the text, each found list then merged with the others. Instead,
 * every string here of `length` characters or more (the scan's run length, run_table.ts `RUN`) is indexed by
 * its first `length` characters, its head, which the scrubber enters in its scan's table (run_table.ts) as it
 * enters a run. The strided scan then reaches the start of every occurrence of such a string, as it reaches a
 * run's (the occurrence holds, at offset 0 to STRIDE − 1 of it, a whole piece that starts at a multiple of
 * STRIDE), and a start is confirmed with `startsWith` where the head's table entry is there. Nothing is lost
 * (the scan reaches every start) and nothing is added (each find is confirmed exactly, in the string's own
 * case). Only shorter strings (a provider's own credential of 4 to 7 characters) are still looked for with
 * `includes` and `indexOf`. Memory: one table entry per distinct head, a few per secret.
 *
 * @module
 */
import { foldText } from "./forms.ts";

/** Strings masked whole, split as the scan finds them; see the module doc. */
export interface Wholes {
  /** The strings of `length` characters or more, by head: their first `length` characters, case folded. */
  readonly byHead: ReadonlyMap<string, readonly string[]>;
  /** The shorter strings, each looked for on its own. */
  readonly short: readonly string[];
}

/** Indexes `strings` (duplicates dropped) by their first `length` characters, case folded. */
export function indexWholes(strings: Iterable<string>, length: number): Wholes {
  const byHead = new Map<string, string[]>();
  const short: string[] = [];
  for (const string of strings) {
    if (string.length < length) {
      if (!short.includes(string)) short.push(string);
      continue;
    }
    const head = foldText(string.slice(0, length));
    const same = byHead.get(head);
    if (same === undefined) byHead.set(head, [string]);
    else if (!same.includes(string)) same.push(string);
  }
  return { byHead, short };
}
