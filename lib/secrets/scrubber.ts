/**
 * The secret matcher: masks every secret of a config in a text, whole or quoted in part.
 *
 * Upstreams that reject a key often quote it back, and rarely whole: OpenAI shows the first 8 characters and the
 * last 4 (`sk-proj-****…abcd`), others echo the first 8–12. So besides exact occurrences, any run of
 * {@linkcode RUN} or more consecutive characters of a secret of at least {@linkcode PARTIAL_MIN} characters is
 * masked too, when the run looks random (a digit or mixed case: see {@linkcode looksRandom}). A secret of plain
 * words (`fake-upstream-key`, `sk-no-key-required`, as local upstreams are given) has no such run: of it, only
 * two or more of its whole words as they stand in it are masked, never one word (`upstream`) on its own. Runs are
 * found with the set of the secret's {@linkcode RUN}-character substrings and one linear scan (a strided look for
 * pieces of runs, then a rolling hash around each piece found, looked up in a table by hash: run_table.ts), so
 * `test` costs a few integer operations per four characters of text, however many long secrets there are, and
 * allocates nothing, whether the text holds a secret or not.
 *
 * Upstreams also quote a key transformed: lower- or upper-cased, or base64-encoded as it was sent
 * (`Basic base64(user:key)`, a header dump of `base64("Bearer " + key)`). The scan folds ASCII letter case on
 * both sides (the text and the runs), while which runs count is still decided on the secret as it is; the base64
 * and base64url forms of each secret (forms.ts) are masked whole; the same scan finds them, and every other
 * string masked whole, by their first {@linkcode RUN} characters (wholes.ts). Scrubbing is linear in the text,
 * with a constant that grows neither with the number of secrets nor with how much of the text is secret (the key
 * repeated costs a few steps a character: scrubber_work_test.ts): one scan, ranges merged as they are found
 * (ranges.ts), and one `indexOf` pass only for each string shorter than a run (a provider's own key of 4 to 7
 * characters). Secrets under {@linkcode PARTIAL_MIN} characters, and one that is a single plain word, are matched
 * in their own case only: folding the whole text for them would cost every log line an allocated copy.
 *
 * Values shorter than {@linkcode MIN_LENGTH} characters are not masked: they are flags and versions (`true`,
 * `v1`), not credentials, and masking them would mangle ordinary text.
 *
 * @module
 */
import { encodedForms, foldCode } from "./forms.ts";
import { addRange, mergeRanges } from "./ranges.ts";
import {
  bitOf,
  hasBit,
  hashAt,
  longestAt,
  pieceHashAt,
  type Place,
  rollHash,
  RUN,
  RunTable,
  STRIDE,
} from "./run_table.ts";
import { indexWholes } from "./wholes.ts";
import { boundaryAt, isWordCode, looksRandom, noteRunCase } from "./words.ts";

/** What a masked secret (or run of one) becomes. */
export const MASK = "***";
export { RUN };
/** Secrets at least this long have their runs masked too; shorter ones only as a whole. */
export const PARTIAL_MIN = 12;
/** Shorter values are never treated as secrets. */
export const MIN_LENGTH = 8;

/** Masks secrets in text. Built once per set of secrets (per resolved config); safe to share. */
export interface Scrubber {
  /** `text` with every secret, and every run of {@linkcode RUN}+ characters of a long one, replaced by `***`. */
  scrub(text: string): string;
  /**
   * `text` cut to `max` characters and masked as {@linkcode Scrubber.scrub} masks the whole of it: a mask that
   * starts before `max` is kept whole, so a secret straddling the cut is masked, and nothing after `max` is kept.
   * Only `text[0, max + longest)` can matter, so a caller bounding its cost passes no more than that (an upstream
   * error of megabytes is cut before it is scrubbed, not after).
   */
  scrubHead(text: string, max: number): string;
  /** True when `text` holds something {@linkcode Scrubber.scrub} would mask; false means it would return it as is. */
  test(text: string): boolean;
  /** The length of the longest text masked as a whole: the margin past a cut that a straddling secret needs. */
  readonly longest: number;
  /** How many distinct secrets it knows. */
  readonly size: number;
}

/** A scrubber that knows no secret: it never changes anything. */
export const NO_SECRETS: Scrubber = {
  scrub: (text) => text,
  scrubHead: (text, max) => text.slice(0, max),
  test: () => false,
  size: 0,
  longest: 0,
};

/** How {@linkcode createScrubber} builds a scrubber. */
export interface ScrubberOptions {
  /** Values this long or longer count (default {@linkcode MIN_LENGTH}). */
  minLength?: number;
  /**
   * Tests only: receives the run scan alone (runs and word parts, as `scrub` looks for them) and the strings
   * `test` looks for whole, from which a test rebuilds `test` as it was before wholes.ts (the scan, then an
   * `includes` of each string) as the oracle the faster `test` is checked against.
   */
  parts?: (scan: (text: string) => boolean, exact: readonly string[]) => void;
}

/**
 * Builds a scrubber for `secrets` (duplicates, empty and too-short values are ignored). `minLength` lowers
 * the threshold for callers that know exactly what their values are (a provider scrubbing its own key).
 *
 * A secret with random-looking runs has those runs masked wherever they appear. A secret of plain words (a
 * passphrase, or a placeholder key such as `fake-upstream-key` or `sk-no-key-required` for a local upstream)
 * has none: its words are ordinary words (`upstream`, `required`), and masking them alone would mangle every
 * message that uses them. Of such a secret, besides the whole of it, only a part of two or more of its whole
 * words, joined as in the secret and standing as whole words in the text (`horse-battery` of
 * `correct-horse-battery-staple`), is masked, and only when it is at least {@linkcode RUN} characters long.
 */
export function createScrubber(secrets: Iterable<string>, options: ScrubberOptions = {}): Scrubber {
  const minLength = options.minLength ?? MIN_LENGTH;
  const wholes = new Set<string>();
  /** Base64 and base64url forms ({@linkcode encodedForms}): masked whole only, never by runs. */
  const encoded = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < minLength) continue;
    wholes.add(secret);
    // As JSON text (a log line) has it, so `test` finds a secret with quotes or backslashes in a serialized line.
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) wholes.add(escaped);
    // A shorter form (of a secret of a few bytes) is too likely a piece of any base64 text to mask.
    for (const form of encodedForms(secret)) if (form.length >= MIN_LENGTH) encoded.add(form);
  }
  if (wholes.size === 0) return NO_SECRETS;
  /** Every run and every head of a whole string the scan looks for, by hash (run_table.ts). */
  const table = new RunTable();
  /**
   * Runs that look random only by their letter case (no digit: `GUARDRAI` of `AKIDFAKEGUARDRAIL…`), by folded
   * form: matched in their own case only, as folded they are a plain word (`guardrail_unavailable`). Runs with
   * a digit (`anyCase`) are matched in any case, an upstream's lower- or upper-cased quote of the key.
   */
  const caseOnly = new Map<string, Set<string>>();
  const anyCase = new Set<string>();
  /** The long secrets with no random-looking run, indexed by `Place.secret`. */
  const words: string[] = [];
  /**
   * Secrets that `test` must find whole, as no run of theirs need be in the text where they are: those too short
   * for runs, the plain-word ones (they may stand inside a longer word, where no part of them counts), and the
   * encoded forms (a run of base64 is no run of the secret). The scan finds them among `all`; this list is the
   * oracle's (`parts`).
   */
  const exact: string[] = [...encoded].filter((form) => !wholes.has(form));
  /** Every secret and form, longest first: `scrub` masks whole occurrences even where no run qualifies. */
  const all = [...wholes, ...exact].sort((a, b) => b.length - a.length);
  for (const secret of wholes) {
    if (secret.length < PARTIAL_MIN) {
      exact.push(secret);
      continue;
    }
    const runs: string[] = [];
    for (let i = 0; i + RUN <= secret.length; i++) runs.push(secret.slice(i, i + RUN));
    const qualified = runs.filter(looksRandom);
    if (qualified.length > 0) {
      for (const run of qualified) {
        const entry = table.entry(run);
        entry.places = null;
        noteRunCase(run, entry.folded, caseOnly, anyCase);
      }
      continue;
    }
    // Plain words: a part of two words or more holds a separator, so every part of RUN characters or more holds
    // a run with one; runs inside one word are never looked for.
    exact.push(secret);
    const index = words.push(secret) - 1;
    runs.forEach((run, offset) => {
      let separated = false;
      for (let i = 0; i < RUN && !separated; i++) separated = !isWordCode(run.charCodeAt(i));
      if (!separated) return;
      const entry = table.entry(run);
      if (entry.places !== null) (entry.places ??= []).push({ secret: index, offset });
    });
  }
  for (const [folded, cases] of caseOnly) table.entry(folded).cases = [...cases];
  /**
   * Every string masked whole, found by the scan at its head (wholes.ts); only those shorter than a run with
   * `includes` and `indexOf`. `test` finds those of `all` that are not in `exact` by their runs anyway.
   */
  const whole = indexWholes(all, RUN);
  for (const strings of whole.byHead.values()) table.entry(strings[0].slice(0, RUN)).wholes = strings;

  /**
   * The part of a plain-word secret that a run found at `start` belongs to: [from, to, agreed], where [from, to)
   * is the part to mask in `text` (empty when it is not two or more whole words of the secret standing as whole
   * words in the text), and `agreed` the end of the stretch of text that agrees with the secret around the run.
   * The text is compared with the secret as far as they agree around the run, then trimmed to word boundaries.
   */
  const wordPiece = (text: string, start: number, place: Place): [number, number, number] => {
    const secret = words[place.secret];
    let from = start;
    let at = place.offset;
    while (
      from > 0 && at > 0 && foldCode(text.charCodeAt(from - 1)) === foldCode(secret.charCodeAt(at - 1))
    ) {
      from--;
      at--;
    }
    let to = start + RUN;
    let end = place.offset + RUN;
    while (
      to < text.length && end < secret.length &&
      foldCode(text.charCodeAt(to)) === foldCode(secret.charCodeAt(end))
    ) {
      to++;
      end++;
    }
    const agreed = to;
    // A part starts and ends with a word character, at a word boundary of both the secret and the text.
    while (
      at < end && !(isWordCode(secret.charCodeAt(at)) && boundaryAt(secret, at) && boundaryAt(text, from))
    ) {
      at++;
      from++;
    }
    while (
      end > at && !(isWordCode(secret.charCodeAt(end - 1)) && boundaryAt(secret, end) && boundaryAt(text, to))
    ) {
      end--;
      to--;
    }
    if (end - at >= RUN) {
      for (let i = at; i < end; i++) if (!isWordCode(secret.charCodeAt(i))) return [from, to, agreed];
    }
    return [0, 0, agreed];
  };

  /**
   * Finds every masked range of a run (a random-looking one, or a part of a plain-word secret it is in) and,
   * unless `runsOnly`, of a string masked whole in `text` and adds it to `out` ({@linkcode addRange}; without
   * `out`, stops at the first): whether there was one. A strided scan for pieces of runs and heads, then, around
   * a piece found, the run hash at each position that could hold one, and the table's entry where the bitmap
   * has it (run_table.ts): a miss costs a few integer operations per STRIDE characters, a find a few more per
   * character, and neither allocates.
   */
  const scanRuns = (text: string, out?: number[], runsOnly = false): boolean => {
    if (text.length < RUN || table.size === 0) return false;
    let any = false;
    /**
     * Per plain-word secret, [alignment, agreed] pairs (alignment: the text index of the secret's first
     * character) of the stretches already compared that reach past the scan: a run in one adds nothing, so each
     * stretch is compared once, which keeps a text made of a secret's words linear.
     */
    let compared: number[][] | undefined;
    /** The first position not yet checked for a whole run: each is checked once, in order. */
    let next = 0;
    const last = text.length - RUN;
    /** The run hash at `rolled`, rolled on where checked positions follow each other (a dense text). */
    let h = 0;
    let rolled = -2;
    for (let at = 0; at + STRIDE <= text.length; at += STRIDE) {
      if (!hasBit(table.pieces, bitOf(pieceHashAt(text, at)))) continue;
      // A run holding this piece at offset 0 to STRIDE - 1 starts up to STRIDE - 1 before it.
      const end = Math.min(at, last);
      for (let start = Math.max(next, at - (STRIDE - 1)); start <= end; start++) {
        h = rolled === start - 1 ? rollHash(text, start, h) : hashAt(text, start);
        rolled = start;
        next = start + 1;
        if (!hasBit(table.bitmap, bitOf(h))) continue;
        const entry = table.at(text, start, h);
        if (entry === undefined) continue;
        if (entry.wholes !== undefined && !runsOnly) {
          const length = longestAt(text, start, entry.wholes);
          if (length > 0) {
            if (out === undefined) return true;
            addRange(out, start, start + length);
            any = true;
          }
        }
        const places = entry.places;
        if (places === null) {
          if (entry.cases !== undefined && longestAt(text, start, entry.cases) === 0) continue;
          if (out === undefined) return true;
          addRange(out, start, start + RUN);
          any = true;
        } else if (places !== undefined) {
          compared ??= words.map(() => []);
          for (const place of places) {
            const alignment = start - place.offset;
            const pairs = compared[place.secret];
            let known = false;
            for (let i = pairs.length - 2; i >= 0; i -= 2) {
              if (pairs[i + 1] <= start) pairs.splice(i, 2);
              else if (pairs[i] === alignment) known = true;
            }
            if (known) continue;
            const [from, to, agreed] = wordPiece(text, start, place);
            pairs.push(alignment, agreed);
            if (from === to) continue;
            if (out === undefined) return true;
            addRange(out, from, to);
            any = true;
          }
        }
      }
    }
    return any;
  };

  /**
   * Masked ranges as flat [start, end) pairs, in order and merged as they are found ({@linkcode addRange}), so
   * what is kept grows with the number of separate masks, not with the number of matches: empty when nothing
   * matched.
   */
  const ranges = (text: string): number[] => {
    let out: number[] = [];
    scanRuns(text, out);
    for (const secret of whole.short) {
      // One string's occurrences come in order, so each is appended (or joined to the last) in constant time;
      // the lists are then merged in one linear pass, not inserted one by one among the scan's.
      const found: number[] = [];
      for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) {
        addRange(found, at, at + secret.length);
      }
      out = mergeRanges(out, found);
    }
    return out;
  };

  const short = whole.short;
  options.parts?.((text) => scanRuns(text, [], true), exact);
  return {
    size: wholes.size,
    longest: all[0].length,
    // Runs on every log line: no allocation unless a prefilter bit matches.
    test: (text) => scanRuns(text) || (short.length > 0 && short.some((string) => text.includes(string))),
    scrub(text) {
      const masked = ranges(text);
      if (masked.length === 0) return text;
      let result = "";
      let at = 0;
      for (let i = 0; i < masked.length; i += 2) {
        result += text.slice(at, masked[i]) + MASK;
        at = masked[i + 1];
      }
      return result + text.slice(at);
    },
    scrubHead(text, max) {
      const masked = ranges(text);
      let result = "";
      let at = 0;
      for (let i = 0; i < masked.length && masked[i] < max; i += 2) {
        result += text.slice(at, masked[i]) + MASK;
        at = masked[i + 1];
      }
      return at < max ? result + text.slice(at, max) : result;
    },
  };
}

const cache = new WeakMap<readonly string[], Scrubber>();

/**
 * The scrubber for a list of a provider's own credentials (its key, its AWS secret), built once per list
 * object. Values of 4 characters or more count: the provider knows they are credentials.
 */
export function scrubberOf(secrets: readonly string[]): Scrubber {
  let scrubber = cache.get(secrets);
  if (scrubber === undefined) {
    scrubber = createScrubber(secrets, { minLength: 4 });
    cache.set(secrets, scrubber);
  }
  return scrubber;
}
