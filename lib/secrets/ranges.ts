/**
 * The masked ranges of a text as the scrubber collects them: flat [start, end) pairs, in order and merged as
 * they are added, so what it keeps grows with the number of separate masks in the text, never with the number
 * of matches (a text made of one key repeated matches at every position and is one range).
 *
 * @module
 */

/**
 * Adds [start, end) to `out`, flat [start, end) pairs kept in order and merged, joining it to the last pair when
 * they touch or overlap: the scan finds runs in order, so a text made of one secret (every position a run) stays
 * one pair, not one array per run. A range that starts before the last pair (a part of a plain-word secret,
 * which reaches back at most that secret's length from the run found) steps back over the pairs after its start
 * only: a few at most, as those lie within one secret's length.
 */
export function addRange(out: number[], start: number, end: number): void {
  let i = out.length;
  while (i > 0 && out[i - 2] > start) i -= 2;
  if (i === out.length && (i === 0 || start > out[i - 1])) {
    // After every pair, as the scan finds most: appended (a splice at the end costs many times a push).
    out.push(start, end);
    return;
  }
  if (i > 0 && start <= out[i - 1]) {
    i -= 2;
    out[i + 1] = Math.max(out[i + 1], end);
  } else {
    out.splice(i, 0, start, end);
  }
  // The widened or inserted pair may now reach the ones after it.
  let j = i + 2;
  while (j < out.length && out[j] <= out[i + 1]) {
    out[i + 1] = Math.max(out[i + 1], out[j + 1]);
    j += 2;
  }
  if (j > i + 2) out.splice(i + 2, j - i - 2);
}

/** Two lists of ordered, merged pairs ({@linkcode addRange}) as one: linear in their lengths. */
export function mergeRanges(a: number[], b: number[]): number[] {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i] <= b[j])) {
      addRange(out, a[i], a[i + 1]);
      i += 2;
    } else {
      addRange(out, b[j], b[j + 1]);
      j += 2;
    }
  }
  return out;
}
