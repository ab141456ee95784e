/**
 * The response cache's lookups and fills, over one {@linkcode CacheStore}: what the answer runner asks before
 * routing a request of a cached alias, and what it tells once the answer is whole.
 *
 * Single-flight: identical requests that arrive while the first is in flight wait for its answer instead of
 * all going upstream. Within a replica they wait on the first one's promise; across replicas (the Redis store)
 * the first one takes a short fill lock in the store, renews it while it fills, and the others poll for the
 * entry until it appears, the lock goes away (its holder failed, or died and the lock expired) or `lock_wait`
 * passes; then they go upstream themselves. A store that fails or is slow never fails a request: the request
 * bypasses the cache, and the failure is counted and shown on `/readyz`. Nor does it hold every request for
 * `cache.timeout`: once a call has failed, the store's calls fail at once (not counted as its errors) but for
 * one per probe interval, which tries it again (`timers/store_breaker.ts`, the counters' rule).
 *
 * @module
 */
import { type CachedAnswer, type CacheStore, CacheStoreRefusal } from "./types.ts";
import type { CacheControl } from "./control.ts";
import { isObject } from "../openai/types.ts";
import { SemanticIndex } from "./semantic_index.ts";
import { createStoreBreaker } from "../timers/store_breaker.ts";

/** How long a fill lock lives without renewal; renewed every third of it while its holder fills. */
export const LOCK_TTL_MS = 10_000;
/** How often a request waiting on another replica's fill looks for the entry. */
export const POLL_MS = 25;

/** The one filling an entry: tells the cache how the answer ended, exactly once (later calls do nothing). */
export interface Fill {
  /** Whether the answer may be written (`no-store` says not). */
  readonly writes: boolean;
  /** A whole, cacheable answer: store it, hand it to whoever waits. */
  write(answer: CachedAnswer): void;
  /** No cacheable answer (an error, a cut stream, an answer that is not cached): let the waiters go. */
  abandon(): void;
}

/** A local flight: the promise identical requests wait on, and how it resolves. */
interface Flight {
  promise: Promise<CachedAnswer | undefined>;
  settle: (answer: CachedAnswer | undefined) => void;
}

/**
 * What a lookup found. A hit's answer is the caller's own (parsed from the store, or copied for each waiter),
 * so rendering may change it in place.
 */
export type Lookup =
  | { kind: "hit"; answer: CachedAnswer }
  | { kind: "miss"; fill: Fill }
  | { kind: "bypass" };

/** What the cache reports about itself (metrics, `/readyz`). */
export interface CacheEvents {
  /** A store call failed or timed out. */
  storeFailed(error: unknown): void;
  /** A store call succeeded (after failures: the store is back). */
  storeOk(): void;
  /** The store answered a call with a refusal ({@linkcode CacheStoreRefusal}): it is up, that call failed. */
  storeRefused?(error: unknown): void;
}

/** Options of {@linkcode createResponseCache}. */
export interface ResponseCacheOptions {
  store: CacheStore;
  /** How long identical requests wait for one in flight (`cache.lock_wait`). */
  lockWaitMs: number;
  /** The longest a store call may take before it counts as failed (`cache.timeout`); unbounded when absent. */
  timeoutMs?: number;
  events?: CacheEvents;
  now?: () => number;
  /** How often, at most, a call tries a store that failed (ms); default the counters' (store_breaker.ts). */
  probeIntervalMs?: number;
}

/** Whether a stored answer may still be served under the alias's settings now (its admission check). */
export type Admits = (answer: CachedAnswer) => boolean;

const ADMIT_ALL: Admits = () => true;

/** The cache the runner uses. */
export interface ResponseCache {
  readonly store: CacheStore;
  /** Whether the store answered its last call (for `/readyz`). */
  readonly ok: boolean;
  /**
   * The entry under `key` for a request: a hit only while it is younger than `ttlMs` (the alias's TTL now, which
   * a reload may have shortened since it was stored) and the request's `max-age`, and `admits` it (the alias's
   * settings now would still keep it); any other entry is a miss, whose fill replaces it.
   */
  lookup(
    key: string,
    ttlMs: number,
    control: CacheControl,
    signal: AbortSignal,
    admits?: Admits,
  ): Promise<Lookup>;
  /**
   * The entry under `key`, if the store has one (a failing store has none) and, with `control`, it is young
   * enough for the request's `max-age` (its token's `cache.max_age` included) and `ttlMs`, and `admits` it.
   */
  read(
    key: string,
    control?: CacheControl,
    ttlMs?: number,
    admits?: Admits,
  ): Promise<CachedAnswer | undefined>;
  /** The semantic index of `alias` in this replica (created on first use; `maxEntries` from its settings). */
  semanticIndex(alias: string, maxEntries: number): SemanticIndex;
  /** Asks the store whether it answers (`/readyz`); true when it does. */
  check(): Promise<boolean>;
  close(): Promise<void>;
}

/** Parses a stored value; undefined when it is not an entry of this version. */
export function parseEntry(raw: string | undefined): CachedAnswer | undefined {
  if (raw === undefined) return undefined;
  try {
    const entry = JSON.parse(raw) as CachedAnswer;
    const whole = isObject(entry?.completion) || isObject(entry?.native);
    return entry?.v === 1 && typeof entry.storedAt === "number" && whole ? entry : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/** Creates the response cache over `options.store`. */
export function createResponseCache(options: ResponseCacheOptions): ResponseCache {
  const { store, lockWaitMs } = options;
  const now = options.now ?? Date.now;
  const flights = new Map<string, Promise<CachedAnswer | undefined>>();

  /** A new local flight for `key`: identical requests wait on its promise until it lands. */
  function takeOff(key: string): Flight {
    let settle!: (answer: CachedAnswer | undefined) => void;
    const promise = new Promise<CachedAnswer | undefined>((resolve) => settle = resolve);
    flights.set(key, promise);
    return { promise, settle };
  }

  /** Ends a local flight: its waiters get `answer`; the key is free for the next one. */
  function land(key: string, flight: Flight, answer: CachedAnswer | undefined): void {
    flight.settle(answer);
    if (flights.get(key) === flight.promise) flights.delete(key);
  }
  const indexes = new Map<string, SemanticIndex>();
  // Up while the store answers; once a call failed, one call per probe interval tries it (the others bypass).
  const breaker = createStoreBreaker({ now, probeIntervalMs: options.probeIntervalMs });

  /**
   * `promise`, or a rejection once `timeoutMs` passed: the stores bound their own calls (Redis's command
   * timeout), and this bounds whatever a store does not, so a slow store never holds a request.
   */
  function within<T>(promise: Promise<T>): Promise<T> {
    const timeoutMs = options.timeoutMs;
    if (timeoutMs === undefined) return promise;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the cache store took longer than ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
  }

  /**
   * A store call; a failure or a call slower than `timeoutMs` is reported and rethrown. While the store is down
   * a call a request waits for that is not the probe rejects at once, unreported (the store was not asked); one
   * made after the answer went out (`after`: a fill's write, its lock's renewal and release) is always tried,
   * so that a lock is given back whenever the store takes it, and tells the breaker how it went.
   */
  async function call<T>(op: () => Promise<T>, after = false): Promise<T> {
    if (!after && !breaker.tryNow()) {
      throw new Error("the cache store failed its last call (tried again once per interval)");
    }
    try {
      const value = await within(op());
      if (breaker.succeeded()) options.events?.storeOk();
      return value;
    } catch (err) {
      if (err instanceof CacheStoreRefusal) {
        // The store answered: it is up, and its entries keep answering lookups while (say) its writes are refused.
        if (breaker.succeeded()) options.events?.storeOk();
        options.events?.storeRefused?.(err);
      } else {
        breaker.failed();
        options.events?.storeFailed(err);
      }
      throw err;
    }
  }

  /**
   * Whether an entry may answer: the alias's settings are checked here, on every hit, not only when the entry
   * was written, as a reload may have changed them since (a shorter `ttl`, `cache_tool_calls` turned off)
   * while the store still holds the entry for the lifetime it was written with.
   */
  const usable = (
    entry: CachedAnswer | undefined,
    control: CacheControl,
    ttlMs: number,
    admits: Admits,
  ): entry is CachedAnswer => {
    if (entry === undefined) return false;
    const age = now() - entry.storedAt;
    // `< ttlMs`, as a fill stores an entry only while some of its `ttlMs` is left.
    return age < ttlMs && (control.maxAgeMs === null || age <= control.maxAgeMs) && admits(entry);
  };

  /** Waits for a local flight, at most `lockWaitMs`, or until the client goes away. */
  function awaitFlight(flight: Promise<CachedAnswer | undefined>, signal: AbortSignal) {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    // A listener added to a signal that fired already never runs.
    if (signal.aborted) stop.abort();
    return Promise.race([flight, sleep(lockWaitMs, stop.signal).then(() => undefined)]).finally(() => {
      stop.abort();
      signal.removeEventListener("abort", onAbort);
    });
  }

  /**
   * A fill; `lock` is the store lock this fill holds, if any; `flight` is the local flight it leads, if any: its
   * waiters get the answer, and it leaves the map (only if still the key's: a fill that leads nothing, such as
   * a `no-cache` refresh, never removes another's).
   */
  function fill(
    key: string,
    ttlMs: number,
    writes: boolean,
    lock: string | null,
    flight?: Flight,
  ): Fill {
    let done = false;
    const renewal = lock === null ? undefined : setInterval(() => {
      call(() => store.renew(key, lock, LOCK_TTL_MS), true).catch(() => {});
    }, LOCK_TTL_MS / 3);
    const end = async (answer: CachedAnswer | undefined) => {
      if (done) return;
      done = true;
      clearInterval(renewal);
      if (flight !== undefined) land(key, flight, answer);
      // An entry lives `ttlMs` from when its answer was stored, whatever key it is written under: an older
      // answer (a semantic hit's, given to the paraphrase's key) keeps only what is left of its lifetime.
      const lifetime = answer === undefined ? 0 : ttlMs - Math.max(0, now() - answer.storedAt);
      try {
        // Written before the lock goes, so another replica that sees the lock gone finds the entry.
        if (answer !== undefined && writes && lifetime > 0) {
          await call(() => store.set(key, JSON.stringify(answer), lifetime), true);
        }
      } catch { /* counted; the answer was served */ }
      if (lock !== null) await call(() => store.unlock(key, lock), true).catch(() => {});
    };
    return {
      writes,
      write: (answer) => void end(answer),
      abandon: () => void end(undefined),
    };
  }

  async function lookup(
    key: string,
    ttlMs: number,
    control: CacheControl,
    signal: AbortSignal,
    admits: Admits = ADMIT_ALL,
  ): Promise<Lookup> {
    if (!control.read) return { kind: "miss", fill: fill(key, ttlMs, control.write, null) };
    let found: CachedAnswer | undefined;
    try {
      found = parseEntry(await call(() => store.get(key)));
    } catch {
      return { kind: "bypass" };
    }
    if (usable(found, control, ttlMs, admits)) return { kind: "hit", answer: found };

    const inFlight = flights.get(key);
    if (inFlight !== undefined) {
      const answer = await awaitFlight(inFlight, signal);
      // Every waiter gets its own copy: each answer is changed as it is rendered (a fresh id, its own frame).
      if (usable(answer, control, ttlMs, admits)) return { kind: "hit", answer: structuredClone(answer) };
      return { kind: "miss", fill: fill(key, ttlMs, control.write, null) };
    }

    const flight = takeOff(key);
    // Only a store other processes share needs its lock; within this one the flight makes the others wait.
    if (!store.shared) return { kind: "miss", fill: fill(key, ttlMs, control.write, null, flight) };
    const holder = crypto.randomUUID();
    let locked: boolean;
    try {
      locked = await call(() => store.lock(key, holder, LOCK_TTL_MS));
    } catch {
      land(key, flight, undefined);
      return { kind: "bypass" };
    }
    // Whichever way the lock went, another replica may have written the entry since this lookup read the store
    // (its fill wrote and unlocked in between): read once more before going upstream.
    const written = async (): Promise<Lookup | undefined> => {
      const answer = parseEntry(await call(() => store.get(key)));
      if (!usable(answer, control, ttlMs, admits)) return undefined;
      land(key, flight, answer);
      return { kind: "hit", answer: structuredClone(answer) };
    };
    if (locked) {
      const hit = await written().catch(() => undefined);
      if (hit !== undefined) {
        await call(() => store.unlock(key, holder)).catch(() => {});
        return hit;
      }
    } else {
      // Another replica fills it: look for its entry until it appears, its lock goes, or the wait is over.
      const deadline = now() + lockWaitMs;
      while (now() < deadline && !signal.aborted) {
        await sleep(POLL_MS, signal);
        try {
          const hit = await written();
          if (hit !== undefined) return hit;
          // The lock is gone: its holder finished (then its entry is written: read it) or failed or died.
          if (!(await call(() => store.locked(key)))) {
            const last = await written();
            if (last !== undefined) return last;
            break;
          }
        } catch {
          break;
        }
      }
    }
    return { kind: "miss", fill: fill(key, ttlMs, control.write, locked ? holder : null, flight) };
  }

  return {
    store,
    get ok() {
      return breaker.up;
    },
    lookup,
    read: (key, control, ttlMs = Infinity, admits = ADMIT_ALL) =>
      call(() => store.get(key)).then(parseEntry, () => undefined).then((entry) =>
        control === undefined || usable(entry, control, ttlMs, admits) ? entry : undefined
      ),
    semanticIndex(alias, maxEntries) {
      let index = indexes.get(alias);
      if (index === undefined || index.maxEntries !== maxEntries) {
        indexes.set(alias, index = new SemanticIndex(maxEntries, now));
      }
      return index;
    },
    check: () => call(() => store.ping()).then(() => true, () => false),
    close: () => store.close(),
  };
}
