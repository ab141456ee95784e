/**
 * The semantic cache's index: for each context (the request without its last user turn, keyed exactly), the
 * embeddings of the last user turns this replica answered and the exact key their answer is stored under.
 * A lookup takes the most similar turn of the same context at or above the threshold.
 *
 * It lives in this process's memory, bounded by entry count (oldest first out), and entries go when their
 * answer expires: each replica finds similar questions among the answers it filled itself (docs/caching.md),
 * while the exact cache is what a fleet shares. Vectors are kept unit-length, so similarity is a dot product.
 *
 * @module
 */

interface Indexed {
  context: string;
  vector: Float32Array;
  key: string;
  expiresAt: number;
}

/** A match: the exact key of the similar question's answer, and how similar it is. */
export interface SemanticMatch {
  key: string;
  similarity: number;
}

/** Unit-length float32 copy of `vector`; undefined for an empty or all-zero vector (nothing to compare). */
export function unitVector(vector: readonly number[]): Float32Array | undefined {
  let norm = 0;
  for (const v of vector) norm += v * v;
  norm = Math.sqrt(norm);
  if (!(norm > 0) || !Number.isFinite(norm)) return undefined;
  const out = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) out[i] = vector[i] / norm;
  return out;
}

function dot(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return -Infinity;
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}

/** How far float32 rounding may move a similarity. */
const FLOAT_SLACK = 1e-6;

/** A bounded in-memory semantic index. */
export class SemanticIndex {
  /** Insertion order is age order: the first entry is the oldest. */
  readonly #entries = new Map<string, Indexed>();
  readonly #byContext = new Map<string, Set<string>>();

  constructor(readonly maxEntries: number, private readonly now: () => number = Date.now) {
    if (!(maxEntries >= 1)) throw new RangeError("a semantic index keeps at least one entry");
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Indexes the last user turn (`vector`) of a request whose answer is stored under `key`. */
  add(context: string, vector: Float32Array, key: string, ttlMs: number): void {
    this.#remove(key);
    while (this.#entries.size >= this.maxEntries) this.#remove(this.#entries.keys().next().value!);
    this.#entries.set(key, { context, vector, key, expiresAt: this.now() + ttlMs });
    let keys = this.#byContext.get(context);
    if (keys === undefined) this.#byContext.set(context, keys = new Set());
    keys.add(key);
  }

  /** The most similar indexed turn of `context` with similarity ≥ `threshold`, if any. */
  find(context: string, vector: Float32Array, threshold: number): SemanticMatch | undefined {
    const keys = this.#byContext.get(context);
    if (keys === undefined) return undefined;
    const now = this.now();
    let best: SemanticMatch | undefined;
    for (const key of [...keys]) {
      const entry = this.#entries.get(key)!;
      if (entry.expiresAt <= now) {
        this.#remove(key);
        continue;
      }
      // Float32 rounding leaves a unit vector's dot with itself a hair under 1: within it, a threshold of 1 holds.
      const similarity = Math.min(1, dot(entry.vector, vector));
      if (similarity >= threshold - FLOAT_SLACK && (best === undefined || similarity > best.similarity)) {
        best = { key, similarity };
      }
    }
    return best;
  }

  /** Forgets `key` (its answer is gone from the store). */
  forget(key: string): void {
    this.#remove(key);
  }

  #remove(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    const keys = this.#byContext.get(entry.context);
    keys?.delete(key);
    if (keys?.size === 0) this.#byContext.delete(entry.context);
  }
}
