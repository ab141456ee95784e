/**
 * Timeouts for the upstream transport without one runtime timer each. Every request arms a first-byte and a
 * total timeout, and every streamed chunk re-arms an idle timeout; nearly all of them are cancelled long
 * before they fire. Armed through `setTimeout`, each costs a timer object, a heap insertion and a removal
 * (about 2 µs per pair on Deno 2.9, plus garbage per chunk).
 *
 * Here, timeouts of the same duration share a lane: a FIFO whose deadlines are in order (each was armed
 * after the one before it, for the same duration), watched by a single runtime timer set for the earliest
 * live entry. Arming appends to the lane, cancelling marks the entry and drops its callback; cancelled
 * entries are skipped when the lane's timer fires and compacted away when they pile up. A timeout never
 * fires early, nor later than `setTimeout` would: the lane's timer is always set for a deadline at or before
 * the earliest live one (when it wakes for a cancelled entry, it re-arms for the next live one).
 *
 * @module
 */

/** A timeout that can be cancelled. */
export interface Deadline {
  /** Stops the timeout from firing; safe to call more than once and after it fired. */
  cancel(): void;
}

class Entry implements Deadline {
  constructor(public at: number, public fire: (() => void) | null, readonly lane: Lane) {}
  cancel(): void {
    if (this.fire === null) return;
    this.fire = null;
    this.lane.cancelOne();
  }
}

/** Entries of one duration, in deadline order, from `head` on. */
class Lane {
  entries: Entry[] = [];
  head = 0;
  cancelled = 0;
  timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * Notes one cancellation. When nothing live is left, the entries are dropped at once; the lane's timer is
   * left to run out (it is unref'd, so it keeps no process alive), which spares the next request arming a
   * new one.
   */
  cancelOne(): void {
    this.cancelled++;
    if (this.cancelled < this.entries.length - this.head) return;
    this.entries = [];
    this.head = 0;
    this.cancelled = 0;
  }
}

/** Fewer cancelled entries than this are never compacted: not worth a copy. */
const COMPACT_MIN = 1024;

/** Arms timeouts on shared lanes; see the module documentation. */
export class DeadlineQueue {
  #lanes = new Map<number, Lane>();
  #now: () => number;

  /** `now` is the clock in ms (monotonic by default); tests may pass their own. */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Calls `fire` once, `ms` from now, unless cancelled before. */
  arm(ms: number, fire: () => void): Deadline {
    let lane = this.#lanes.get(ms);
    if (lane === undefined) {
      lane = new Lane();
      this.#lanes.set(ms, lane);
    }
    const entry = new Entry(this.#now() + ms, fire, lane);
    lane.entries.push(entry);
    if (lane.timer === undefined) this.#schedule(lane, entry.at);
    else if (lane.cancelled > COMPACT_MIN && lane.cancelled * 2 > lane.entries.length - lane.head) {
      this.#compact(lane);
    }
    return entry;
  }

  /** Live (armed, not cancelled, not fired) timeouts, for tests. */
  get size(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) n += lane.entries.length - lane.head - lane.cancelled;
    return n;
  }

  /** Entries held, live or cancelled-but-not-yet-dropped, for tests of the compaction. */
  get held(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) n += lane.entries.length - lane.head;
    return n;
  }

  #schedule(lane: Lane, at: number): void {
    const timer = setTimeout(() => this.#expire(lane), Math.max(0, at - this.#now()));
    // Deno 2.9 and Bun return Node-style timers: the upstream request keeps the process alive, not its timeout.
    (timer as unknown as { unref?: () => void }).unref?.();
    lane.timer = timer;
  }

  #expire(lane: Lane): void {
    lane.timer = undefined;
    const now = this.#now();
    const due: (() => void)[] = [];
    while (lane.head < lane.entries.length) {
      const entry = lane.entries[lane.head];
      if (entry.fire === null) {
        lane.cancelled--;
      } else if (entry.at <= now) {
        due.push(entry.fire);
        entry.fire = null;
      } else {
        break;
      }
      lane.entries[lane.head++] = undefined as unknown as Entry;
    }
    if (lane.head === lane.entries.length) {
      lane.entries = [];
      lane.head = 0;
    } else {
      if (lane.head > COMPACT_MIN && lane.head * 2 > lane.entries.length) this.#compact(lane);
      this.#schedule(lane, lane.entries[lane.head].at);
    }
    for (const fire of due) fire();
  }

  /** Drops cancelled entries (and the consumed prefix) from `lane`, keeping the order of the rest. */
  #compact(lane: Lane): void {
    const live: Entry[] = [];
    for (let i = lane.head; i < lane.entries.length; i++) {
      const entry = lane.entries[i];
      if (entry.fire !== null) live.push(entry);
    }
    lane.entries = live;
    lane.head = 0;
    lane.cancelled = 0;
  }
}
