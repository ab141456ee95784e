/**
 * Work held per key (for alerts: per receiver) and handed out fairly, so that one key whose work is slow or
 * failing never holds up another's. Each key has its own queue and may have at most `perKey` items running of
 * the `concurrency` in all; {@linkcode Lanes.next} serves the keys round-robin, one item each in turn. Items
 * parked (waiting for a retry) count as held but are not handed out until unparked, at the back of their
 * key's queue. A key is forgotten as soon as it has nothing held or running, so keys cost nothing idle.
 *
 * The last free slot is kept for a key with nothing running: a key already running may take a further slot
 * only while another stays free. Items running cannot be taken back, so without this a few stuck keys, each
 * within its `perKey`, could fill every slot and make a key with work of its own wait for their timeouts. With
 * it, when every slot is taken the last one went to a key starting its first item, so filling `concurrency`
 * slots takes `k` keys with `(k - 1) * perKey + 1 >= concurrency`: with 4 slots and 2 per key, three stuck
 * keys, never two. The price: the last slot stays idle while only keys already running have work.
 *
 * @module
 */

interface Lane<K, T> {
  readonly key: K;
  readonly queue: T[];
  readonly parked: Set<T>;
  running: number;
}

/** Per-key queues served round-robin, within a global and a per-key bound of items running. */
export class Lanes<K, T extends { readonly seq: number }> {
  readonly #byKey = new Map<K, Lane<K, T>>();
  /** Keys with work held or running, in round-robin order: the next one served first. */
  #order: Lane<K, T>[] = [];
  #held = 0;
  #running = 0;

  constructor(readonly concurrency: number, readonly perKey: number) {}

  /** Items queued or parked, over all keys. */
  get held(): number {
    return this.#held;
  }

  /** Items handed out and not yet {@linkcode finished}. */
  get running(): number {
    return this.#running;
  }

  #lane(key: K): Lane<K, T> {
    let lane = this.#byKey.get(key);
    if (lane === undefined) {
      lane = { key, queue: [], parked: new Set(), running: 0 };
      this.#byKey.set(key, lane);
      // First in turn: it has had none of the slots yet, those before it may just have had theirs.
      this.#order.unshift(lane);
    }
    return lane;
  }

  #tidy(lane: Lane<K, T>): void {
    if (lane.queue.length > 0 || lane.parked.size > 0 || lane.running > 0) return;
    this.#byKey.delete(lane.key);
    this.#order = this.#order.filter((l) => l !== lane);
  }

  /** Puts `item` at the back of `key`'s queue. */
  queue(key: K, item: T): void {
    this.#lane(key).queue.push(item);
    this.#held++;
  }

  /** Holds `item` for `key` without handing it out until {@linkcode unpark}. */
  park(key: K, item: T): void {
    this.#lane(key).parked.add(item);
    this.#held++;
  }

  /** Moves a parked `item` to the back of its key's queue. */
  unpark(key: K, item: T): void {
    const lane = this.#byKey.get(key);
    if (lane === undefined || !lane.parked.delete(item)) return;
    lane.queue.push(item);
  }

  /** Moves every parked item to the back of its key's queue, and returns them. */
  unparkAll(): T[] {
    const out: T[] = [];
    for (const lane of this.#order) {
      for (const item of lane.parked) {
        lane.queue.push(item);
        out.push(item);
      }
      lane.parked.clear();
    }
    return out;
  }

  /**
   * The next item to run, from the next key in turn with one queued and a free share (the last free slot only
   * for a key with nothing running); or undefined.
   */
  next(): { key: K; item: T } | undefined {
    if (this.#running >= this.concurrency) return undefined;
    for (let passed = 0; passed < this.#order.length; passed++) {
      const lane = this.#order.shift()!;
      this.#order.push(lane);
      if (lane.queue.length === 0 || lane.running >= this.perKey) continue;
      // The last free slot is for a key with nothing running (see the module documentation).
      if (lane.running > 0 && this.#running + 1 >= this.concurrency) continue;
      lane.running++;
      this.#running++;
      this.#held--;
      return { key: lane.key, item: lane.queue.shift()! };
    }
    return undefined;
  }

  /** An item {@linkcode next} handed out for `key` is done running. */
  finished(key: K): void {
    const lane = this.#byKey.get(key);
    if (lane === undefined) return;
    lane.running--;
    this.#running--;
    this.#tidy(lane);
  }

  /**
   * Takes out the oldest item (lowest `seq`) of the key holding the most (of those holding as many, the one
   * whose oldest is oldest), to make room; or undefined when nothing is held.
   */
  evict(): T | undefined {
    let fullest: Lane<K, T> | undefined;
    let most = 0;
    let oldest: T | undefined;
    for (const lane of this.#order) {
      const n = lane.queue.length + lane.parked.size;
      if (n === 0 || n < most) continue;
      let first: T | undefined;
      for (const item of [...lane.queue, ...lane.parked]) {
        if (!first || item.seq < first.seq) first = item;
      }
      if (n > most || first!.seq < oldest!.seq) [fullest, most, oldest] = [lane, n, first];
    }
    if (fullest === undefined) return undefined;
    const i = fullest.queue.indexOf(oldest!);
    if (i >= 0) fullest.queue.splice(i, 1);
    else fullest.parked.delete(oldest!);
    this.#held--;
    this.#tidy(fullest);
    return oldest;
  }

  /** Takes out every queued item (parked ones stay). */
  takeQueued(): T[] {
    const out: T[] = [];
    for (const lane of [...this.#order]) {
      out.push(...lane.queue.splice(0));
      this.#tidy(lane);
    }
    this.#held -= out.length;
    return out;
  }
}
