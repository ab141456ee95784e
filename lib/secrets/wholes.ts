/**
 * The strings the scrubber's `test` looks for whole (the base64 and base64url forms of each secret, the secrets
 * too short for runs, the plain-word ones), found by the run scan instead of one `includes` per string.
 *
 * Each secret has up to six encoded forms (three byte alignments × two alphabets), so a config of 12 secrets
 * made `test` call `includes` some 70 times on every log line, about three times the cost of the scan itself.
 * Instead, every string here of `length` characters or more (the scan's run length, scrubber.ts `RUN`) is
 * indexed by its first `length` characters, its head, which the caller marks in its scan's prefilter bitmaps
 * as it marks a run. The strided scan then reaches the start of every occurrence of such a string, as it
 * reaches a run's (the occurrence holds, at offset 0 to STRIDE − 1 of it, a whole piece that starts at a
 * multiple of STRIDE), and a start is confirmed with `startsWith` where the prefilter bits and the head's map
 * entry agree. Nothing is lost (the scan reaches every start) and nothing is added (each find is confirmed
 * exactly, in the string's own case). Only shorter strings (a provider's own credential of 4 to 7 characters)
 * are still looked for with `includes`. Memory: one map entry per distinct head, a few per secret.
 *
 * @module
 */
import { foldText } from "./forms.ts";

/** Strings looked for whole; see the module doc. */
export interface Wholes {
  /** Whether any string is indexed by head, so the scan must run for them. */
  readonly scanned: boolean;
  /**
   * Whether an indexed string starts at `start` in `text`, given `head`: `text[start, start + length)` folded
   * ({@linkcode foldText}), the key the scan computes for its own lookup of runs.
   */
  startsAt(text: string, start: number, head: string): boolean;
  /** Whether `text` holds one of the strings too short to index (each looked for with `includes`). */
  shortIn(text: string): boolean;
}

/**
 * Indexes `strings` by their first `length` characters (the head, case folded) and calls `mark` with each one's
 * head, for the caller to set its prefilter bits (the head's case-folded hash and its first STRIDE pieces, as
 * scrubber.ts `mark` does for a run). Folding costs only a few more candidate positions (base64 is mixed case):
 * the confirmation is exact, in the string's own case.
 */
export function indexWholes(
  strings: readonly string[],
  length: number,
  mark: (head: string) => void,
): Wholes {
  const byHead = new Map<string, string[]>();
  const short: string[] = [];
  for (const string of strings) {
    if (string.length < length) {
      short.push(string);
      continue;
    }
    const head = string.slice(0, length);
    const key = foldText(head);
    const same = byHead.get(key);
    if (same === undefined) byHead.set(key, [string]);
    else if (!same.includes(string)) same.push(string);
    mark(head);
  }
  return {
    scanned: byHead.size > 0,
    startsAt(text, start, head) {
      const same = byHead.get(head);
      if (same === undefined) return false;
      for (const string of same) if (text.startsWith(string, start)) return true;
      return false;
    },
    shortIn: (text) => short.some((string) => text.includes(string)),
  };
}
