/**
 * The usage pipeline: takes one record per request off the hot path and gets it into the store, the optional
 * JSONL file, or the spill file — never nowhere. `write()` is O(1) and never blocks or throws: it pushes
 * onto a bounded in-memory queue; a background worker stores batches (every `flushIntervalMs`, or as soon as
 * a batch is full), one batch in flight at a time.
 *
 * - Store failing: the batch is kept and retried with exponential backoff while new records queue behind it.
 * - Queue full (store slow or failing): new records go to the spill file (serialized appends, never dropped).
 * - Replay: at startup, after the store recovers, and once the queue drains after spilling, the spill file is
 *   replayed into the store batch by batch, interleaved with fresh batches (see `spill.ts` for crash safety).
 * - `flush()`/`close()`: everything queued is stored; what the store refuses (or does not accept within the
 *   shutdown timeout; for `close()`, within `closeTimeoutMs` in all, the batch in flight included) is spilled.
 *   Records written after `close()` are spilled.
 * - Retention: `deleteOlderThan(now - retention)` at start and every `retentionIntervalMs`.
 *
 * Every record gets a `uid` (a per-process random prefix plus a counter) on `write()`; the store de-duplicates
 * on it, which makes replays idempotent. The pipeline does not own the store: close the store after it.
 *
 * This module composes the parts and owns the store lane and the backoff they share; the spill file and its
 * replay are in `spill_replay.ts`, retention in `retention.ts`.
 *
 * @module
 */
import type { Logger, LogValue } from "../log.ts";
import { createJsonlSink, type JsonlAppender } from "./jsonl_sink.ts";
import { BoundedQueue } from "./queue.ts";
import type { UsageRecord } from "./record.ts";
import { startRetention } from "./retention.ts";
import { SpillReplay } from "./spill_replay.ts";
import { entryLine, storedOf, type StoredUsageRecord, type UsageEntry, type UsageStore } from "./store.ts";

/** How the pipeline is set up; the first fields mirror `usage` in the config. */
export interface UsagePipelineOptions {
  /** Null for `usage.sqlite: none`: records then go to the JSONL file, or to the spill file without one. */
  store: UsageStore | null;
  /** Also append every record (with its `uid`) to this JSONL file. */
  jsonlPath?: string;
  spillPath: string;
  /** Most records held in memory awaiting the store; beyond it they spill. Also bounds the JSONL buffer. */
  queueSize: number;
  /** Records per insert; a full batch is flushed at once rather than at the next tick. */
  batchSize: number;
  flushIntervalMs: number;
  logger: Logger;
  /** Records older than this are deleted; none without it. */
  retentionMs?: number;
  /** How often retention runs after the first run at start. Default hourly. */
  retentionIntervalMs?: number;
  /** Backoff cap after repeated store failures (doubling from `flushIntervalMs`). Default 30 s. */
  retryMaxMs?: number;
  /** How long `flush()` waits for one insert before spilling, and `replaySpill()` retries. Default 30 s. */
  shutdownTimeoutMs?: number;
  /**
   * How long `close()` gives the store in all (the batch in flight, then the final inserts) before it spills
   * whatever the store has not confirmed: a shutdown's share of the time its platform allows, so that a hung
   * database never holds the records in memory until the process is killed. Default `shutdownTimeoutMs`.
   */
  closeTimeoutMs?: number;
  /** The clock, for retention in tests. */
  now?: () => number;
  /**
   * Called (on the store lane, so keep it short) when a replay has put the last records of a spill file into
   * the store: budgets seeded at start never saw them.
   */
  onSpillReplayed?: () => void;
}

/** Counters for tests and metrics. */
export interface UsagePipelineStats {
  /** Records in memory awaiting the store (the queue plus a batch held for retry). */
  queued: number;
  /** Records inserted from the queue. */
  stored: number;
  /** Records sent to the spill file (overflow, shutdown with a failing store, no store). */
  spilled: number;
  /** Records inserted from the spill file (duplicates included; the store ignores them). */
  replayed: number;
  /** Failed store calls (inserts and replays). */
  failures: number;
  /** Records left out because they could not be read (a throwing getter); each is logged. */
  invalid: number;
  /** Spilled records not yet on disk. */
  spillPending: number;
  /** JSONL records refused because the JSONL writer fell `queueSize` records behind. */
  jsonlDropped: number;
}

/** Where the request path hands its usage records. */
export interface UsagePipeline {
  /** Queues `record`; O(1), never blocks, never throws. */
  write(record: UsageRecord): void;
  /** Resolves once everything written so far is stored or spilled (and the JSONL file written). */
  flush(): Promise<void>;
  /**
   * Replays the spill file into the store now (it also happens by itself at startup and after recovery):
   * resolves once the file is replayed, retrying a failing store with backoff for up to `shutdownTimeoutMs`;
   * what is left then stays on disk for later.
   */
  replaySpill(): Promise<void>;
  /** Stops the timers and flushes everything; an unfinished replay stays on disk for the next start. */
  close(): Promise<void>;
  stats(): UsagePipelineStats;
  /**
   * For `/readyz`, from what the pipeline already knows (no call to the store): `ok` while the last insert did not
   * fail; `spilling` once a record has gone to the spill file since the store last took a batch.
   */
  health(): { ok: boolean; spilling: boolean };
}

/** Starts the pipeline: timers, then (in the background) retention and a replay of any leftover spill file. */
export function createUsagePipeline(options: UsagePipelineOptions): UsagePipeline {
  const { store, logger, batchSize } = options;
  const flushIntervalMs = Math.max(10, options.flushIntervalMs); // a 0 interval would spin
  const now = options.now ?? Date.now;
  const retryMaxMs = options.retryMaxMs ?? 30_000;
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 30_000;
  const closeTimeoutMs = options.closeTimeoutMs ?? shutdownTimeoutMs;
  const queue = new BoundedQueue<UsageEntry>(options.queueSize);
  const spill = new SpillReplay({
    store,
    spillPath: options.spillPath,
    batchSize,
    retryMaxMs,
    logger,
    health: { succeeded, failed },
    onReplayed: options.onSpillReplayed,
  });
  const jsonl: JsonlAppender<UsageEntry> | null = options.jsonlPath
    ? createJsonlSink<UsageEntry>(options.jsonlPath, {
      logger,
      maxBuffered: options.queueSize,
      serialize: entryLine,
      // without a store the JSONL file is the record of usage, so its overflow must not vanish
      onOverflow: store ? undefined : (entry) => spillEntry(entry),
    })
    : null;

  const boot = crypto.randomUUID();
  let seq = 0;
  /** The batch being inserted or waiting for its retry; always the oldest records. */
  let retry: UsageEntry[] | null = null;
  let consecutiveFailures = 0;
  let nextAttemptAt = 0;
  let closed = false;
  let closing: Promise<void> | null = null;
  /** Serializes every store call: one in flight at a time. Operations on it never reject. */
  let lane: Promise<void> = Promise.resolve();
  let pumpScheduled = false;
  /** A record was spilled since the store last took a batch (`health()`). */
  let spilledSinceStored = false;
  const counters = { stored: 0, failures: 0, invalid: 0 };
  /** The counters in the order `stats()` and the closing log line have always listed them. */
  const counts = () => ({
    stored: counters.stored,
    spilled: spill.spilled,
    replayed: spill.replayed,
    failures: counters.failures,
    invalid: counters.invalid,
  });

  const onLane = <T>(fn: () => Promise<T>): Promise<T> => {
    const result = lane.then(fn);
    lane = result.then(noop, noop);
    return result;
  };

  /** Runs `fn` on the lane without anyone awaiting it: a throw is logged, never an unhandled rejection. */
  const background = (fn: () => Promise<void>): void => {
    onLane(fn).catch((e) => logger.error("usage_pipeline_error", { error: errorText(e) }));
  };

  function spillEntry(entry: UsageEntry): void {
    spilledSinceStored = true;
    spill.append(entry);
  }

  /**
   * The batch as records for the store. A record that cannot even be copied (a throwing getter) is logged and
   * left out: it would otherwise fail its batch on every retry and stall the pipeline.
   */
  function storable(batch: readonly UsageEntry[]): StoredUsageRecord[] {
    const out: StoredUsageRecord[] = [];
    for (const entry of batch) {
      try {
        out.push(storedOf(entry));
      } catch (e) {
        counters.invalid++;
        logger.error("usage_record_invalid", { uid: entry.uid, error: errorText(e) });
      }
    }
    return out;
  }

  function schedulePump(): void {
    if (pumpScheduled || closed) return;
    pumpScheduled = true;
    background(pump);
  }

  function succeeded(): void {
    spilledSinceStored = false;
    if (consecutiveFailures === 0) return;
    logger.info("usage_store_recovered", { failed_attempts: consecutiveFailures });
    consecutiveFailures = 0;
    nextAttemptAt = 0;
    spill.wanted = true;
  }

  function failed(e: unknown, fields: Record<string, LogValue>): void {
    counters.failures++;
    consecutiveFailures++;
    const backoff = Math.min(
      retryMaxMs,
      flushIntervalMs * 2 ** Math.min(consecutiveFailures - 1, 30),
    );
    nextAttemptAt = Date.now() + backoff;
    if (consecutiveFailures === 1 || consecutiveFailures % 10 === 0) {
      logger.error("usage_store_failed", {
        ...fields,
        consecutive_failures: consecutiveFailures,
        retry_in_ms: backoff,
        queued: queue.length,
        error: errorText(e),
      });
    }
  }

  /**
   * Inserts what is queued when it starts, batch by batch. In the background (`final` false) a failure keeps
   * the batch and backs off; for flush/close (`final`) a failure or timeout spills the batch and the rest.
   */
  async function drain(final: boolean): Promise<void> {
    if (!store) return;
    let budget = queue.length + (retry?.length ?? 0);
    while (budget > 0) {
      if (!final && Date.now() < nextAttemptAt) return;
      const batch = retry ?? queue.take(Math.min(batchSize, budget));
      if (batch.length === 0) return; // emptied meanwhile (close() spilled the queue)
      retry = batch;
      budget -= batch.length;
      try {
        const insert = store.insert(storable(batch));
        await (final ? withTimeout(insert, shutdownTimeoutMs) : insert);
        retry = null;
        counters.stored += batch.length;
        succeeded();
      } catch (e) {
        failed(e, { records: batch.length });
        if (!final) return;
        // close() ran out of time first and spilled this batch and the queue itself: spilled once, not twice.
        if (retry !== batch) return;
        retry = null;
        for (const entry of batch) spillEntry(entry);
        for (const entry of queue.take(budget)) spillEntry(entry);
        return;
      }
    }
  }

  async function pump(): Promise<void> {
    pumpScheduled = false;
    await drain(false);
    const idle = retry === null && queue.length < batchSize;
    const due = Date.now() >= nextAttemptAt && spill.ready(Date.now());
    if (spill.wanted && idle && due && !closed && (await spill.step()) === "more") schedulePump();
  }

  const tick = setInterval(() => {
    schedulePump();
    void spill.flush(); // retries a failed spill write; a no-op otherwise
    void jsonl?.flush();
  }, flushIntervalMs);
  const stopRetention = startRetention({ ...options, now }, background);
  schedulePump();

  return {
    write(record) {
      try {
        const entry: UsageEntry = { record, uid: `${boot}-${(seq++).toString(36)}` };
        jsonl?.append(entry);
        if (!store) {
          if (!jsonl) spillEntry(entry);
          return;
        }
        if (closed || !queue.push(entry)) {
          spillEntry(entry);
          return;
        }
        if (queue.length >= batchSize) schedulePump();
      } catch (e) {
        try {
          logger.error("usage_write_failed", { error: errorText(e) });
        } catch {
          // nothing more can be done without risking the request
        }
      }
    },

    async flush() {
      await onLane(() => drain(true));
      await spill.flush();
      await jsonl?.flush();
    },

    replaySpill() {
      spill.wanted = true;
      return onLane(async () => {
        const deadline = Date.now() + shutdownTimeoutMs;
        while (!closed) {
          await drain(false); // fresh records first, as in the background
          const step = retry === null ? await spill.step() : "failed";
          if (step === "more") continue;
          if (step === "done" || step === "error") return;
          // the store is failing: wait out the backoff, up to the deadline
          const wait = nextAttemptAt - Date.now();
          if (Date.now() + wait >= deadline) {
            logger.warn("usage_spill_replay_incomplete", { timeout_ms: shutdownTimeoutMs });
            return;
          }
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
      });
    },

    close() {
      closing ??= (async () => {
        closed = true;
        clearInterval(tick);
        stopRetention();
        const finished = onLane(async () => {
          await spill.stop(); // the rest stays in `.replaying`
          await drain(true);
        });
        try {
          await withTimeout(finished, closeTimeoutMs);
        } catch {
          // The store has not confirmed the batch in flight (or the final ones) in time: spill it and the queue.
          // An insert that commits after all is harmless: the replay's copy has the same `uid`, which the store
          // ignores, so each record is stored once.
          logger.error("usage_close_timeout", { timeout_ms: closeTimeoutMs, queued: queue.length });
          const stuck = retry ?? [];
          retry = null;
          for (const entry of [...stuck, ...queue.take(queue.length)]) spillEntry(entry);
        }
        await spill.close();
        await jsonl?.close();
        logger.info("usage_pipeline_closed", counts());
      })();
      return closing;
    },

    health() {
      return { ok: consecutiveFailures === 0, spilling: spilledSinceStored };
    },

    stats() {
      return {
        queued: queue.length + (retry?.length ?? 0),
        ...counts(),
        spillPending: spill.pending,
        jsonlDropped: jsonl?.stats().dropped ?? 0,
      };
    },
  };
}

function noop(): void {}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** `promise`, or a rejection after `ms`; the timer is always cleared. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
