/**
 * Usage retention: records older than `retentionMs` are deleted once at start and then every
 * `retentionIntervalMs`. The deletes are handed to `schedule`, which is the pipeline's store lane, so they
 * never run beside an insert. A failing delete is logged and waits for the next run: retention must never
 * take the pipeline down.
 *
 * A run deletes in batches of `retentionBatch` records, each its own statement, until a batch comes back
 * short: one statement over a large backlog (a retention newly set, a store that was down for days) outlasts
 * PostgreSQL's time limit, rolls back and deletes nothing, hour after hour, and in SQLite it holds the worker
 * from every other call while it runs. A run stops after `retentionMaxRunMs`, so the inserts waiting on the
 * lane behind it wait at most that long; the rest of a backlog goes in the next runs.
 *
 * Stored responses (`responses.retention`, default 30 days) are pruned the same way, in the same batches and
 * with the same time bound, beside it ({@linkcode startResponsesRetention}): they have their own period, and in
 * the SQLite store their deletes run in the same worker as the inserts, one call (one batch) at a time, so they
 * need no lane of the pipeline.
 *
 * @module
 */
import type { Logger } from "../log.ts";
import type { ResponsesStore } from "./responses_store.ts";
import type { UsageStore } from "./store.ts";

export interface RetentionOptions {
  /** Null for `usage.sqlite: none`: nothing to delete from. */
  store: UsageStore | null;
  /** Records older than this are deleted; none without it. */
  retentionMs?: number;
  /** How often retention runs after the first run at start. Default hourly. */
  retentionIntervalMs?: number;
  /** Records deleted per statement. Default {@linkcode RETENTION_BATCH}. */
  retentionBatch?: number;
  /** How long one run keeps deleting batches. Default {@linkcode RETENTION_MAX_RUN_MS}. */
  retentionMaxRunMs?: number;
  /** The clock the cut-off (and a run's time bound) is taken from. */
  now: () => number;
  logger: Logger;
}

/** Records deleted per statement by default: well inside a statement time limit of a second or two. */
export const RETENTION_BATCH = 5_000;
/** How long one retention run keeps deleting batches by default. */
export const RETENTION_MAX_RUN_MS = 15_000;

/**
 * Deletes the records older than `now() - retentionMs`, batch by batch, until none is left or the run's time is
 * up; never throws. A no-op without a store or retention.
 */
export async function runRetention(options: RetentionOptions): Promise<void> {
  const { store } = options;
  if (!store) return;
  await runBatches(options, "usage_retention", (before, limit) => store.deleteOlderThan(before, limit));
}

/**
 * One retention run over `deleteBatch` (at most `limit` rows older than `before`, one statement; how many it
 * deleted): calls it until a batch comes back short or `retentionMaxRunMs` has passed since the run started,
 * then logs `<event>` with how many (and `more: true` when the run stopped with a backlog left, which the next
 * run goes on with). A failure is logged as `<event>_failed`, never thrown. A no-op without a retention.
 */
async function runBatches(
  options: Omit<RetentionOptions, "store">,
  event: string,
  deleteBatch: (before: string, limit: number) => Promise<number>,
): Promise<void> {
  const { retentionMs, logger } = options;
  if (!retentionMs) return;
  const started = options.now();
  const before = new Date(started - retentionMs).toISOString();
  const batch = options.retentionBatch ?? RETENTION_BATCH;
  const maxRunMs = options.retentionMaxRunMs ?? RETENTION_MAX_RUN_MS;
  let deleted = 0;
  let finished = false;
  try {
    while (true) {
      const n = await deleteBatch(before, batch);
      deleted += n;
      if (n < batch) {
        finished = true;
        break;
      }
      if (options.now() - started >= maxRunMs) break;
    }
  } catch (e) {
    logger.warn(`${event}_failed`, {
      before,
      ...(deleted > 0 ? { deleted } : {}),
      error: e instanceof Error ? e.message : String(e),
    });
    return;
  }
  if (deleted > 0) {
    logger.info(event, finished ? { deleted, before } : { deleted, before, more: true });
  }
}

/**
 * Hands a first run to `schedule` now and (with a store and a retention) one every interval after it;
 * returns what stops the interval.
 */
export function startRetention(
  options: RetentionOptions,
  schedule: (run: () => Promise<void>) => void,
): () => void {
  return startRuns(options, () => runRetention(options), schedule);
}

/** How stored responses are pruned: {@linkcode RetentionOptions} with the responses store. */
export interface ResponsesRetentionOptions extends Omit<RetentionOptions, "store"> {
  /** Null when no responses are stored. */
  store: ResponsesStore | null;
}

/**
 * Deletes the stored responses created before `now() - retentionMs` (and their items), batch by batch, as
 * {@linkcode runRetention} does the records; never throws. A no-op without a store or retention.
 */
export async function runResponsesRetention(options: ResponsesRetentionOptions): Promise<void> {
  const { store } = options;
  if (!store) return;
  await runBatches(options, "responses_retention", (before, limit) => store.prune(before, limit));
}

/**
 * {@linkcode startRetention} for stored responses: a first prune now, then one every interval; returns what
 * stops the interval. Without a lane to share, `schedule` may simply call `run`.
 */
export function startResponsesRetention(
  options: ResponsesRetentionOptions,
  schedule: (run: () => Promise<void>) => void = (run) => void run(),
): () => void {
  return startRuns(options, () => runResponsesRetention(options), schedule);
}

function startRuns(
  options: { store: unknown; retentionMs?: number; retentionIntervalMs?: number },
  run: () => Promise<void>,
  schedule: (run: () => Promise<void>) => void,
): () => void {
  const timer = options.store && options.retentionMs
    ? setInterval(() => schedule(run), options.retentionIntervalMs ?? 3_600_000)
    : undefined;
  schedule(run);
  return () => {
    if (timer !== undefined) clearInterval(timer);
  };
}
