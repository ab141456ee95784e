/**
 * A target's `max_in_flight` held across every worker of one gateway, as one process holds it: one counter
 * per target in shared memory, taken and given back with `Atomics`, so a worker's check and its take are one
 * atomic step and no two workers can both take the last place. Each worker also counts what it holds in a row
 * of its own, so when it dies the primary gives back exactly its places.
 *
 * Targets find their counter by a 64-bit hash of their key in an open-addressed table; two keys with the same
 * hash (not seen in practice) would share a counter, which can only hold them tighter, never looser. A
 * target's key changes with its provider's settings (a rotated API key is a new target), so after each reload
 * the primary frees the counters of targets no longer configured that nobody holds ({@linkcode
 * SharedInFlight.retain}); a counter still held is freed at a later reload. Should the table still be full, a
 * target without a counter is held per worker (at most `max_in_flight` on each), never not at all.
 *
 * Finding and claiming a key, and freeing, happen under a lock word (short, never across an await); taking
 * and giving back do not. A take adds to the counter first and then checks the slot still has its key: a
 * slot is freed only while its counter is 0 (the free swaps it for a large negative), so a take either holds
 * the slot before the free (which then leaves it) or sees it freed or reused and takes nothing there.
 *
 * @module
 */

/** Counters in the table: far more than the targets of any config (a reload's new targets take new ones). */
const SLOTS = 1024;
/** Int32s per slot in the key area: the two halves of the key's hash. */
const KEY_WORDS = 2;
/** A first key word marking a freed slot: skipped by a search (keys after it stay found), reused by a claim. */
const FREED = -0x80000000;
/** What a free swaps a counter of 0 for while it clears the key: any take meanwhile sees it below 0. */
const FREEING = -0x40000000;
/** Int32s after the table: the lock (0, or the holder's number + 1) and the generation of frees. */
const LOCK = 0;
const GENERATION = 1;
const TAIL_WORDS = 2;

/** The buffer every worker and the primary share, for `workers` workers. */
export function createInFlightBuffer(workers: number): SharedArrayBuffer {
  return new SharedArrayBuffer(4 * (SLOTS * (KEY_WORDS + 1 + workers) + TAIL_WORDS));
}

/** Two independent 32-bit hashes of `key` (FNV-1a and a murmur-style mix), never 0 or {@linkcode FREED}. */
function hashOf(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  // Zero marks an empty word and FREED a freed slot, so neither is a hash.
  const word = (h: number) => (h === 0 || h === FREED ? h + 1 : h) | 0;
  return [word(a | 0), word(b | 0)];
}

/** One worker's (or the primary's) view of the shared counters. */
export class SharedInFlight {
  readonly #buffer: SharedArrayBuffer;
  readonly #keys: Int32Array;
  readonly #counts: Int32Array;
  readonly #held: Int32Array | null;
  readonly #tail: Int32Array;
  readonly #workers: number;
  /** The lock's value while this view holds it. */
  readonly #lockId: number;
  /** Slots found, by key; dropped whenever the primary frees slots (so it holds only keys in use since). */
  #slots = new Map<string, number>();
  #generation = 0;
  /** Places held on this worker alone, by key, for targets the full table had no counter for. */
  readonly #local = new Map<string, number>();

  /**
   * `worker` is this worker's number (its row of holds); the primary passes `workers`: it only gives back a
   * dead worker's places and frees the counters of targets no longer configured.
   */
  constructor(buffer: SharedArrayBuffer, workers: number, worker: number) {
    this.#buffer = buffer;
    this.#workers = workers;
    this.#lockId = worker + 1;
    this.#keys = new Int32Array(buffer, 0, SLOTS * KEY_WORDS);
    this.#counts = new Int32Array(buffer, 4 * SLOTS * KEY_WORDS, SLOTS);
    this.#held = worker < workers ? this.#row(worker) : null;
    this.#tail = new Int32Array(buffer, 4 * SLOTS * (KEY_WORDS + 1 + workers), TAIL_WORDS);
  }

  /** Takes a place on the target `key` if fewer than `max` are taken across all workers. */
  take(key: string, max: number): boolean {
    for (let tries = 0; tries < 8; tries++) {
      const slot = this.#slot(key);
      if (slot < 0) break;
      const before = Atomics.add(this.#counts, slot, 1);
      if (before < 0 || !this.#holds(slot, key)) {
        // Being freed, or freed and perhaps another target's since: not this target's counter any more.
        Atomics.sub(this.#counts, slot, 1);
        this.#slots.delete(key);
        continue;
      }
      if (before >= max) {
        Atomics.sub(this.#counts, slot, 1);
        return false;
      }
      Atomics.add(this.#held!, slot, 1);
      return true;
    }
    // No counter for it (the table is full): held on this worker alone.
    const held = this.#local.get(key) ?? 0;
    if (held >= max) return false;
    this.#local.set(key, held + 1);
    return true;
  }

  /** Gives back a place taken by {@linkcode take}. */
  give(key: string): void {
    const local = this.#local.get(key);
    if (local !== undefined) {
      if (local <= 1) this.#local.delete(key);
      else this.#local.set(key, local - 1);
      return;
    }
    // A place held keeps its slot from being freed, so the key finds the slot it was taken on.
    const slot = this.#slot(key);
    if (slot < 0) return;
    Atomics.sub(this.#held!, slot, 1);
    Atomics.sub(this.#counts, slot, 1);
  }

  /**
   * The places taken on the target `key` across every worker now (for `/admin/targets` and `/admin/explain`):
   * a read, which never claims a counter for a key not taken anywhere yet.
   */
  taken(key: string): number {
    const local = this.#local.get(key);
    if (local !== undefined) return local;
    const slot = this.#find(key);
    return slot < 0 ? 0 : Math.max(0, Atomics.load(this.#counts, slot));
  }

  /** Gives back every place worker `worker` held (it died), and clears its row for its replacement. */
  release(worker: number): void {
    if (worker < 0 || worker >= this.#workers) return;
    const held = this.#row(worker);
    for (let slot = 0; slot < SLOTS; slot++) {
      const count = Atomics.exchange(held, slot, 0);
      if (count !== 0) Atomics.sub(this.#counts, slot, count);
    }
    // A worker ended mid-search (a few instructions) would hold the lock forever.
    Atomics.compareExchange(this.#tail, LOCK, worker + 1, 0);
  }

  /**
   * Frees the counters of targets not among `live` (the config every worker serves now) that nobody holds;
   * returns how many were freed. Called by the primary after a reload.
   */
  retain(live: Iterable<string>): number {
    const kept = new Set<string>();
    for (const key of live) kept.add(hashOf(key).join(","));
    let freed = 0;
    this.#locked(() => {
      for (let slot = 0; slot < SLOTS; slot++) {
        const at = slot * KEY_WORDS;
        const first = Atomics.load(this.#keys, at);
        if (first === 0 || first === FREED) continue;
        if (kept.has(`${first},${Atomics.load(this.#keys, at + 1)}`)) continue;
        if (Atomics.compareExchange(this.#counts, slot, 0, FREEING) !== 0) continue; // held: a later reload
        Atomics.store(this.#keys, at + 1, 0);
        Atomics.store(this.#keys, at, FREED);
        Atomics.sub(this.#counts, slot, FREEING);
        freed++;
      }
      if (freed > 0) Atomics.add(this.#tail, GENERATION, 1);
    });
    return freed;
  }

  #row(worker: number): Int32Array {
    return new Int32Array(this.#buffer, 4 * SLOTS * (KEY_WORDS + 1 + worker), SLOTS);
  }

  /** Whether `slot` has `key`'s hash. */
  #holds(slot: number, key: string): boolean {
    const [a, b] = hashOf(key);
    const at = slot * KEY_WORDS;
    return Atomics.load(this.#keys, at) === a && Atomics.load(this.#keys, at + 1) === b;
  }

  #locked(fn: () => void): void {
    while (Atomics.compareExchange(this.#tail, LOCK, 0, this.#lockId) !== 0) {
      // Held for a few instructions by another thread: wait a moment, without an event-loop turn.
      Atomics.wait(this.#tail, LOCK, Atomics.load(this.#tail, LOCK), 1);
    }
    try {
      fn();
    } finally {
      Atomics.store(this.#tail, LOCK, 0);
      Atomics.notify(this.#tail, LOCK);
    }
  }

  /** The target's slot if it has one, without claiming: −1 when none. */
  #find(key: string): number {
    const [a, b] = hashOf(key);
    const start = (a >>> 0) % SLOTS;
    for (let i = 0; i < SLOTS; i++) {
      const slot = (start + i) % SLOTS;
      const first = Atomics.load(this.#keys, slot * KEY_WORDS);
      if (first === 0) return -1;
      if (first === a && Atomics.load(this.#keys, slot * KEY_WORDS + 1) === b) return slot;
    }
    return -1;
  }

  /** The target's slot: found by its hash, or claimed; −1 when the table is full. */
  #slot(key: string): number {
    const generation = Atomics.load(this.#tail, GENERATION);
    if (generation !== this.#generation) {
      this.#generation = generation;
      this.#slots = new Map();
    }
    const known = this.#slots.get(key);
    if (known !== undefined) return known;
    const [a, b] = hashOf(key);
    let found = -1;
    this.#locked(() => {
      let freed = -1;
      const start = (a >>> 0) % SLOTS;
      for (let i = 0; i < SLOTS; i++) {
        const slot = (start + i) % SLOTS;
        const at = slot * KEY_WORDS;
        const first = Atomics.load(this.#keys, at);
        if (first === FREED) {
          if (freed < 0) freed = slot;
          continue;
        }
        if (first === 0) {
          found = freed >= 0 ? freed : slot;
          break;
        }
        if (first === a && Atomics.load(this.#keys, at + 1) === b) {
          found = slot;
          return;
        }
      }
      if (found < 0) found = freed; // no empty slot: a freed one, or none
      if (found < 0) return;
      // The second word first: a take that reads the first word as this key's reads the second as well.
      Atomics.store(this.#keys, found * KEY_WORDS + 1, b);
      Atomics.store(this.#keys, found * KEY_WORDS, a);
    });
    if (found >= 0) this.#slots.set(key, found);
    return found;
  }
}
