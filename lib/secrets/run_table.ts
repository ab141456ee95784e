/**
 * What the scrubber's scan looks for, and how it looks at a position without allocating: the prefilter bitmaps
 * of the runs' and heads' hashes, and the table of their entries by hash, confirmed character by character.
 *
 * The scan (scrubber.ts) rolls a case-folded hash of {@linkcode RUN} characters over the text. Where the bitmap
 * says a position may start something, {@linkcode RunTable.at} finds the entry whose characters are there (folded)
 * by comparing char codes. The scan used to cut the {@linkcode RUN} characters out and fold them into a new
 * string for a map lookup at such a position: on a text dense with a secret (an upstream that repeats the key it
 * was sent, or puts it in every key of a large object) that was an allocation and two regular expressions per
 * character, some 0.3 µs a character, seconds for an answer of a few megabytes. Now a position costs a map
 * lookup of an integer and a few comparisons, whatever the text holds.
 *
 * @module
 */
import { foldCode, foldText } from "./forms.ts";

/** Shortest run of a long secret's characters that is masked; the length of a head (wholes.ts). */
export const RUN = 8;

/**
 * The scan looks at every {@linkcode STRIDE}th position only, for a {@linkcode STRIDE}-character piece of a run:
 * a run of {@linkcode RUN} (≥ 2 × STRIDE − 1) characters anywhere in a text holds, at offset 0 to STRIDE − 1 of
 * it, a whole piece that starts at a multiple of STRIDE, so no run is missed; only around a piece that is one is
 * each position checked for a whole run. A log line is read in a quarter of the steps.
 */
export const STRIDE = 4;

const BASE = 0x01000193;
/** Bits of the prefilter bitmap: a hash hit costs a table lookup, a miss nothing. */
const BITMAP_BITS = 1 << 16;

/** `BASE ** (RUN - 1)` mod 2^32, to drop the leading character from the rolling hash. */
const DROP = (() => {
  let p = 1;
  for (let i = 0; i < RUN - 1; i++) p = Math.imul(p, BASE) >>> 0;
  return p;
})();

/** The bit of the prefilter bitmaps that `hash` sets. */
export function bitOf(hash: number): number {
  return (hash ^ (hash >>> 16)) & (BITMAP_BITS - 1);
}

/** Whether `bit` is set in `bitmap`. */
export function hasBit(bitmap: Uint32Array, bit: number): boolean {
  return (bitmap[bit >>> 5] & (1 << (bit & 31))) !== 0;
}

/** The hash of `text[from, from + RUN)`, case folded ({@linkcode foldCode}). */
export function hashAt(text: string, from: number): number {
  let h = 0;
  for (let i = from; i < from + RUN; i++) h = (Math.imul(h, BASE) + foldCode(text.charCodeAt(i))) >>> 0;
  return h;
}

/** The hash of `text[at, at + RUN)`, given `hash`, the hash of `text[at - 1, at - 1 + RUN)`. */
export function rollHash(text: string, at: number, hash: number): number {
  return (Math.imul((hash - Math.imul(foldCode(text.charCodeAt(at - 1)), DROP)) >>> 0, BASE) +
    foldCode(text.charCodeAt(at + RUN - 1))) >>> 0;
}

/** The hash of `text[from, from + STRIDE)`, case folded. */
export function pieceHashAt(text: string, from: number): number {
  return (Math.imul(
    (Math.imul(
      (Math.imul(foldCode(text.charCodeAt(from)), BASE) + foldCode(text.charCodeAt(from + 1))) >>> 0,
      BASE,
    ) + foldCode(text.charCodeAt(from + 2))) >>> 0,
    BASE,
  ) + foldCode(text.charCodeAt(from + 3))) >>> 0;
}

/** Where a run of a plain-word secret starts in it: `words[secret]` (scrubber.ts), at `offset`. */
export interface Place {
  readonly secret: number;
  readonly offset: number;
}

/** What {@linkcode RUN} characters (in any letter case) are to the scan. */
export interface Entry {
  /** The characters as first entered (a secret's own case, which a text dense with it most likely has). */
  readonly run: string;
  /** The characters, case folded. */
  readonly folded: string;
  /**
   * As a run of a secret: `null` for a random-looking run (masked as it is), the places of a run of plain-word
   * secrets (masked only as a part of their whole words), `undefined` for no run.
   */
  places: Place[] | null | undefined;
  /**
   * The letter cases a random-looking run counts in when it looks random only by its case (words.ts
   * `noteRunCase`), or `undefined`: any case.
   */
  cases: string[] | undefined;
  /** The strings masked whole that start with these characters (folded), each confirmed in its own case. */
  wholes: readonly string[] | undefined;
}

/**
 * The entries of a scrubber's runs and heads, by hash, with the bitmaps the scan reads before it. Found by open
 * addressing over typed arrays, not a `Map` of hashes: a 32-bit hash is no small integer to V8, and a `Map` keyed
 * by it hashed a heap number at every position of a text dense with a secret.
 */
export class RunTable {
  /** A bit per {@linkcode RUN}-character hash of an entry. */
  readonly bitmap: Uint32Array = new Uint32Array(BITMAP_BITS / 32);
  /** A bit per hash of each {@linkcode STRIDE}-character piece of an entry: what the strided scan looks for. */
  readonly pieces: Uint32Array = new Uint32Array(BITMAP_BITS / 32);
  readonly #entries: Entry[] = [];
  /** Each entry's hash, by its index in `#entries`. */
  #hashes = new Uint32Array(8);
  /** Open addressing: 1 + the index of an entry, at its hash's slot or the next free one after it; 0 is free. */
  #slots = new Int32Array(16);

  /** How many distinct entries there are: none, and the scan has nothing to look for. */
  get size(): number {
    return this.#entries.length;
  }

  /** The entry of `run` ({@linkcode RUN} characters, any case): made and marked in the bitmaps when new. */
  entry(run: string): Entry {
    const folded = foldText(run);
    const hash = hashAt(folded, 0);
    const known = this.at(folded, 0, hash);
    if (known !== undefined) return known;
    const entry: Entry = { run, folded, places: undefined, cases: undefined, wholes: undefined };
    const index = this.#entries.push(entry) - 1;
    if (index >= this.#hashes.length) {
      const hashes = new Uint32Array(2 * this.#hashes.length);
      hashes.set(this.#hashes);
      this.#hashes = hashes;
    }
    this.#hashes[index] = hash;
    if (2 * this.#entries.length > this.#slots.length) {
      this.#slots = new Int32Array(2 * this.#slots.length);
      for (let i = 0; i < index; i++) this.#place(i);
    }
    this.#place(index);
    const bit = bitOf(hash);
    this.bitmap[bit >>> 5] |= 1 << (bit & 31);
    for (let i = 0; i < STRIDE; i++) {
      const piece = bitOf(pieceHashAt(folded, i));
      this.pieces[piece >>> 5] |= 1 << (piece & 31);
    }
    return entry;
  }

  /** Puts entry `index` in the first free slot from its hash's. */
  #place(index: number): void {
    const mask = this.#slots.length - 1;
    let slot = this.#hashes[index] & mask;
    while (this.#slots[slot] !== 0) slot = (slot + 1) & mask;
    this.#slots[slot] = index + 1;
  }

  /** The entry whose characters stand at `start` in `text` (case folded), given their `hash`; no allocation. */
  at(text: string, start: number, hash: number): Entry | undefined {
    const slots = this.#slots;
    const mask = slots.length - 1;
    for (let slot = hash & mask; slots[slot] !== 0; slot = (slot + 1) & mask) {
      const index = slots[slot] - 1;
      if (this.#hashes[index] !== hash) continue;
      const entry = this.#entries[index];
      // In the case it was entered in, one native comparison; else character by character, folded.
      if (text.startsWith(entry.run, start)) return entry;
      const folded = entry.folded;
      let i = 0;
      while (i < RUN && foldCode(text.charCodeAt(start + i)) === folded.charCodeAt(i)) i++;
      if (i === RUN) return entry;
    }
    return undefined;
  }
}

/** The length of the longest of `strings` that starts at `start` in `text`, in its own case; 0 for none. */
export function longestAt(text: string, start: number, strings: readonly string[]): number {
  let longest = 0;
  for (const string of strings) {
    if (string.length > longest && text.startsWith(string, start)) longest = string.length;
  }
  return longest;
}
