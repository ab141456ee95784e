/**
 * Runs work keyed by a string one at a time per key, in the order it was asked for: how one replica makes its
 * changes of one stored token (PATCH, revoke, rotate) one after another instead of letting them race, so that
 * each reads the token as the one before it left it and none has to be refused. Across replicas the store's
 * compare-and-set (`TokenStore.put`'s `basedOn`) is what keeps changes from overwriting each other.
 *
 * @module
 */

/** Queues of work per key; a key whose queue has run dry is forgotten, so ids do not pile up. */
export class OneAtATime {
  readonly #tails = new Map<string, Promise<void>>();

  /**
   * Runs `work` once every earlier `run` of `key` has settled, and settles as it does. A rejection is the
   * caller's alone: the next in line runs all the same.
   */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.#tails.get(key) ?? Promise.resolve();
    const result = before.then(work);
    const tail = result.then(() => {}, () => {});
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Keys with work queued or running. */
  get busy(): number {
    return this.#tails.size;
  }
}
