/**
 * Bounded label values: a label that takes a value from a client or an upstream (an error code, a model an
 * answer names) keeps the first few distinct values and reads `_OTHER` for the rest, so no caller can grow a
 * metric's series (and the exporter's memory) without limit.
 *
 * @module
 */

/** The label value every value past the bound (or of the wrong shape) reads. */
export const OTHER = "_OTHER";

/** What an error code looks like: a short identifier. Anything else reads `_OTHER`. */
export const ERROR_CODE_SHAPE = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Keeps the first `max` distinct values of a label (plus a fixed allow-list); later ones read `_OTHER`. */
export class BoundedValues {
  readonly #kept: Set<string>;
  #extra = 0;

  constructor(readonly max: number, allowed: readonly string[] = [], readonly shape?: RegExp) {
    this.#kept = new Set(allowed);
  }

  get(value: string): string {
    if (this.#kept.has(value)) return value;
    if (this.#extra >= this.max || (this.shape !== undefined && !this.shape.test(value))) return OTHER;
    this.#kept.add(value);
    this.#extra++;
    return value;
  }
}
