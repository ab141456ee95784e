/**
 * The secret matcher: masks every secret of a config in a text, whole or quoted in part.
 *
 * Upstreams that reject a key often quote it back, and rarely whole: OpenAI shows the first 8 characters and the
 * last 4 (`sk-proj-****…abcd`), others echo the first 8–12. So besides exact occurrences, any run of
 * {@linkcode RUN} or more consecutive characters of a secret of at least {@linkcode PARTIAL_MIN} characters is
 * masked too, when the run looks random (a digit or mixed case: see {@linkcode looksRandom}). Runs are found with
 * the set of the secret's {@linkcode RUN}-character substrings and one linear scan with a rolling hash, so
 * `test` costs a few integer operations per character of text, however many long secrets there are, and
 * allocates nothing when the text holds none.
 *
 * Values shorter than {@linkcode MIN_LENGTH} characters are not masked: they are flags and versions (`true`,
 * `v1`), not credentials, and masking them would mangle ordinary text.
 *
 * @module
 */

/** What a masked secret (or run of one) becomes. */
export const MASK = "***";
/** Shortest run of a long secret's characters that is masked. */
export const RUN = 8;
/** Secrets at least this long have their runs masked too; shorter ones only as a whole. */
export const PARTIAL_MIN = 12;
/** Shorter values are never treated as secrets. */
export const MIN_LENGTH = 8;

/** Masks secrets in text. Built once per set of secrets (per resolved config); safe to share. */
export interface Scrubber {
  /** `text` with every secret, and every run of {@linkcode RUN}+ characters of a long one, replaced by `***`. */
  scrub(text: string): string;
  /** True when `text` holds something {@linkcode Scrubber.scrub} would mask; false means it would return it as is. */
  test(text: string): boolean;
  /** How many distinct secrets it knows. */
  readonly size: number;
}

const BASE = 0x01000193;
/** Bits of the prefilter bitmap: a hash hit costs a substring and a set lookup, a miss nothing. */
const BITMAP_BITS = 1 << 16;

function bitOf(hash: number): number {
  return (hash ^ (hash >>> 16)) & (BITMAP_BITS - 1);
}

/** The rolling hash of `text[from, from + RUN)`. */
function hashAt(text: string, from: number): number {
  let h = 0;
  for (let i = from; i < from + RUN; i++) h = (Math.imul(h, BASE) + text.charCodeAt(i)) >>> 0;
  return h;
}

/** `BASE ** (RUN - 1)` mod 2^32, to drop the leading character from the rolling hash. */
const DROP = (() => {
  let p = 1;
  for (let i = 0; i < RUN - 1; i++) p = Math.imul(p, BASE) >>> 0;
  return p;
})();

/**
 * Whether a run of a secret is distinctive enough to mask wherever it appears: it has a digit or mixed case
 * (`Xq7vB2mN`), as runs of generated keys almost always do. Runs of plain words (`disabled`, `Internal`) or a
 * public key prefix (`sk-proj-`) are not, and masking them would mangle the gateway's own messages
 * (`token_disabled`) for a token that happens to contain the word.
 */
function looksRandom(run: string): boolean {
  return /[0-9]|[a-z][A-Z]|[A-Z]{2}/.test(run);
}

/** A scrubber that knows no secret: it never changes anything. */
export const NO_SECRETS: Scrubber = { scrub: (text) => text, test: () => false, size: 0 };

/**
 * Builds a scrubber for `secrets` (duplicates, empty and too-short values are ignored). `minLength` lowers
 * the threshold for callers that know exactly what their values are (a provider scrubbing its own key).
 */
export function createScrubber(secrets: Iterable<string>, options: { minLength?: number } = {}): Scrubber {
  const minLength = options.minLength ?? MIN_LENGTH;
  const wholes = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < minLength) continue;
    wholes.add(secret);
    // As JSON text (a log line) has it, so `test` finds a secret with quotes or backslashes in a serialized line.
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) wholes.add(escaped);
  }
  if (wholes.size === 0) return NO_SECRETS;
  const grams = new Set<string>();
  const bitmap = new Uint32Array(BITMAP_BITS / 32);
  /** Secrets too short for runs, longest first so a prefix never leaves a tail behind; checked by `test`. */
  const short: string[] = [];
  /** Every secret, longest first: `scrub` masks whole occurrences even where no run qualifies. */
  const all = [...wholes].sort((a, b) => b.length - a.length);
  for (const secret of all) {
    if (secret.length < PARTIAL_MIN) {
      short.push(secret);
      continue;
    }
    const runs: string[] = [];
    for (let i = 0; i + RUN <= secret.length; i++) runs.push(secret.slice(i, i + RUN));
    // A passphrase of plain words has no random-looking run: then every run counts.
    const qualified = runs.filter(looksRandom);
    for (const run of qualified.length > 0 ? qualified : runs) {
      grams.add(run);
      const bit = bitOf(hashAt(run, 0));
      bitmap[bit >>> 5] |= 1 << (bit & 31);
    }
  }

  /** Masked ranges as flat [start, end) pairs, in order and merged; empty when nothing matched. */
  const ranges = (text: string, firstOnly: boolean): number[] => {
    const out: number[] = [];
    const add = (start: number, end: number) => {
      const last = out.length - 1;
      if (last >= 0 && start <= out[last]) out[last] = Math.max(out[last], end);
      else out.push(start, end);
    };
    if (grams.size > 0 && text.length >= RUN) {
      let h = hashAt(text, 0);
      for (let start = 0;; start++) {
        const bit = bitOf(h);
        if ((bitmap[bit >>> 5] & (1 << (bit & 31))) !== 0 && grams.has(text.slice(start, start + RUN))) {
          add(start, start + RUN);
          if (firstOnly) return out;
        }
        if (start + RUN >= text.length) break;
        h = (Math.imul((h - Math.imul(text.charCodeAt(start), DROP)) >>> 0, BASE) +
          text.charCodeAt(start + RUN)) >>> 0;
      }
    }
    const exact = firstOnly ? short : all;
    if (exact.length === 0) return out;
    const found: number[][] = [];
    for (const secret of exact) {
      for (let at = text.indexOf(secret); at >= 0; at = text.indexOf(secret, at + 1)) {
        if (firstOnly) return [at, at + secret.length];
        found.push([at, at + secret.length]);
      }
    }
    if (found.length === 0) return out;
    for (let i = 0; i < out.length; i += 2) found.push([out[i], out[i + 1]]);
    found.sort((a, b) => a[0] - b[0]);
    out.length = 0;
    for (const [start, end] of found) add(start, end);
    return out;
  };

  /** Whether any run of a long secret is in `text`: the scan of `ranges`, without building anything. */
  const hasRun = (text: string): boolean => {
    if (grams.size === 0 || text.length < RUN) return false;
    let h = hashAt(text, 0);
    for (let start = 0;; start++) {
      const bit = bitOf(h);
      if ((bitmap[bit >>> 5] & (1 << (bit & 31))) !== 0 && grams.has(text.slice(start, start + RUN))) {
        return true;
      }
      if (start + RUN >= text.length) return false;
      h = (Math.imul((h - Math.imul(text.charCodeAt(start), DROP)) >>> 0, BASE) +
        text.charCodeAt(start + RUN)) >>> 0;
    }
  };

  return {
    size: wholes.size,
    // Runs on every log line: no allocation unless a prefilter bit matches.
    test: (text) => hasRun(text) || short.some((secret) => text.includes(secret)),
    scrub(text) {
      const masked = ranges(text, false);
      if (masked.length === 0) return text;
      let result = "";
      let at = 0;
      for (let i = 0; i < masked.length; i += 2) {
        result += text.slice(at, masked[i]) + MASK;
        at = masked[i + 1];
      }
      return result + text.slice(at);
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
