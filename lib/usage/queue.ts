/**
 * A fixed-capacity FIFO ring buffer. The usage pipeline puts every record through one so that `write()` is
 * O(1) and memory stays bounded however slow the store is: when the buffer is full, `push` says so and the
 * caller spills the record to disk instead of growing an array without limit.
 *
 * @module
 */

/** A bounded first-in-first-out queue; `push` refuses (returns false) instead of growing past `capacity`. */
export class BoundedQueue<T> {
  readonly #items: (T | undefined)[];
  #head = 0;
  #size = 0;

  /** `capacity` is the most items held at once (at least 1). */
  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`queue capacity must be a positive integer, got ${capacity}`);
    }
    this.#items = new Array<T | undefined>(capacity);
  }

  /** How many items are queued. */
  get length(): number {
    return this.#size;
  }

  /** True when the next `push` would be refused. */
  get full(): boolean {
    return this.#size === this.capacity;
  }

  /** Appends `item` in O(1); false (and nothing queued) when the queue is full. */
  push(item: T): boolean {
    if (this.#size === this.capacity) return false;
    this.#items[(this.#head + this.#size) % this.capacity] = item;
    this.#size++;
    return true;
  }

  /** Removes and returns up to `max` items from the front, oldest first. */
  take(max: number): T[] {
    const n = Math.max(0, Math.min(Math.floor(max), this.#size));
    const out = new Array<T>(n);
    for (let i = 0; i < n; i++) {
      const at = (this.#head + i) % this.capacity;
      out[i] = this.#items[at] as T;
      this.#items[at] = undefined; // let the record be collected
    }
    this.#head = (this.#head + n) % this.capacity;
    this.#size -= n;
    return out;
  }
}
