/**
 * A target's `max_in_flight` held across every worker of one gateway, as one process holds it: one counter
 * per target in shared memory, taken and given back with `Atomics`, so a worker's check and its take are one
 * atomic step and no two workers can both take the last place. Each worker also counts what it holds in a row
 * of its own, so when it dies the primary gives back exactly its places.
 *
 * Targets find their counter by a 64-bit hash of their key in an open-addressed table; two keys with the same
 * hash (not seen in practice) would share a counter, which can only hold them tighter, never looser.
 *
 * @module
 */

/** Counters in the table: far more than the targets of any config (a reload's new targets take new ones). */
const SLOTS = 1024;
/** Int32s per slot in the key area: the two halves of the key's hash. */
const KEY_WORDS = 2;

/** The buffer every worker and the primary share, for `workers` workers. */
export function createInFlightBuffer(workers: number): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * SLOTS * (KEY_WORDS + 1 + workers));
}

/** Two independent 32-bit hashes of `key` (FNV-1a and a murmur-style mix). */
function hashOf(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  return [a | 0, b | 0];
}

/** One worker's (or the primary's) view of the shared counters. */
export class SharedInFlight {
  readonly #buffer: SharedArrayBuffer;
  readonly #keys: Int32Array;
  readonly #counts: Int32Array;
  readonly #held: Int32Array;
  readonly #workers: number;
  readonly #slots = new Map<string, number>();

  /** `worker` is this worker's number (its row of holds); the primary passes any, it only gives back. */
  constructor(buffer: SharedArrayBuffer, workers: number, worker: number) {
    this.#buffer = buffer;
    this.#workers = workers;
    this.#keys = new Int32Array(buffer, 0, SLOTS * KEY_WORDS);
    this.#counts = new Int32Array(buffer, 4 * SLOTS * KEY_WORDS, SLOTS);
    this.#held = new Int32Array(buffer, 4 * SLOTS * (KEY_WORDS + 1 + worker), SLOTS);
  }

  /** Takes a place on the target `key` if fewer than `max` are taken across all workers. */
  take(key: string, max: number): boolean {
    const slot = this.#slot(key);
    if (slot < 0) return true; // the table is full: held per worker only (a config of over 1,024 targets)
    if (Atomics.add(this.#counts, slot, 1) >= max) {
      Atomics.sub(this.#counts, slot, 1);
      return false;
    }
    Atomics.add(this.#held, slot, 1);
    return true;
  }

  /** Gives back a place taken by {@linkcode take}. */
  give(key: string): void {
    const slot = this.#slot(key);
    if (slot < 0) return;
    Atomics.sub(this.#held, slot, 1);
    Atomics.sub(this.#counts, slot, 1);
  }

  /** Gives back every place worker `worker` held (it died), and clears its row for its replacement. */
  release(worker: number): void {
    if (worker < 0 || worker >= this.#workers) return;
    const held = new Int32Array(this.#buffer, 4 * SLOTS * (KEY_WORDS + 1 + worker), SLOTS);
    for (let slot = 0; slot < SLOTS; slot++) {
      const count = Atomics.exchange(held, slot, 0);
      if (count !== 0) Atomics.sub(this.#counts, slot, count);
    }
  }

  /** The target's slot: found by its hash, or claimed; −1 when the table is full. */
  #slot(key: string): number {
    const known = this.#slots.get(key);
    if (known !== undefined) return known;
    const [a, b] = hashOf(key);
    // Zero marks an empty word, so a hash half of zero is stored as one.
    const ka = a === 0 ? 1 : a;
    const kb = b === 0 ? 1 : b;
    const start = (a >>> 0) % SLOTS;
    for (let i = 0; i < SLOTS; i++) {
      const slot = (start + i) % SLOTS;
      const at = slot * KEY_WORDS;
      // The first word is claimed atomically; the second is written by the claimer right after, so a reader
      // that finds the first word set waits for the second (a few instructions) before comparing.
      const first = Atomics.compareExchange(this.#keys, at, 0, ka);
      if (first === 0) {
        Atomics.store(this.#keys, at + 1, kb);
        this.#slots.set(key, slot);
        return slot;
      }
      if (first !== ka) continue;
      let second = Atomics.load(this.#keys, at + 1);
      while (second === 0) second = Atomics.load(this.#keys, at + 1);
      if (second === kb) {
        this.#slots.set(key, slot);
        return slot;
      }
    }
    return -1;
  }
}
