/**
 * The pipeline's overflow path: records the store cannot take now are appended to the spill file, and the file
 * is replayed into the store one batch at a time once it can take them again. The pipeline decides *when* a
 * step runs (on its store lane, between fresh batches, after its backoff); this module owns *what* a step does
 * and the replay's state across steps: the open reader, a batch the store refused (kept and retried as is, not
 * read again), and the pause after an unreadable file. Crash safety of the file itself is in `spill.ts`.
 *
 * @module
 */
import type { Logger, LogValue } from "../log.ts";
import { SpillFile, type SpillReader } from "./spill.ts";
import type { StoredUsageRecord, UsageEntry, UsageStore } from "./store.ts";

/**
 * One replay step's outcome: `more` to replay, `done` (nothing left), `failed` (the store refused the batch,
 * which is kept for the retry) or `error` (the spill file could not be read; retried after `retryMaxMs`).
 */
export type ReplayStep = "more" | "done" | "failed" | "error";

/** How the store's health is reported back to the pipeline, which owns the backoff shared with fresh batches. */
export interface StoreHealth {
  succeeded(): void;
  failed(e: unknown, fields: Record<string, LogValue>): void;
}

export interface SpillReplayOptions {
  /** Null for `usage.sqlite: none`: spilled records then stay on disk and nothing is replayed. */
  store: UsageStore | null;
  spillPath: string;
  /** Records per replayed insert. */
  batchSize: number;
  /** How long to wait before retrying a spill file that could not be read. */
  retryMaxMs: number;
  logger: Logger;
  health: StoreHealth;
  /**
   * Called when a replay has put the last records of a spill file into the store: usage the budget counters of
   * this process may never have counted (the last run's) is now there to seed them from.
   */
  onReplayed?: () => void;
}

/** The spill file plus the state of replaying it into the store. */
export class SpillReplay {
  /** Whether there may be something to replay: set by a spill, a recovery or a request; cleared when done. */
  wanted: boolean;
  /** Records appended to the spill file. */
  spilled = 0;
  /** Records inserted from the spill file (duplicates included; the store ignores them). */
  replayed = 0;
  readonly #file: SpillFile;
  readonly #options: SpillReplayOptions;
  #notBefore = 0;
  #reader: SpillReader | null = null;
  #batch: StoredUsageRecord[] | null = null;
  /** Records inserted from the file the open reader reads. */
  #replayedFromFile = 0;

  constructor(options: SpillReplayOptions) {
    this.#options = options;
    this.#file = new SpillFile(options.spillPath, options.logger);
    this.wanted = options.store !== null;
  }

  /** Spilled records not yet on disk. */
  get pending(): number {
    return this.#file.pending;
  }

  /** Whether the pause after an unreadable spill file is over. */
  ready(now: number): boolean {
    return now >= this.#notBefore;
  }

  /** Appends `entry` to the spill file (serialized, never dropped) and marks the file for replay. */
  append(entry: UsageEntry): void {
    this.#file.append(entry);
    this.spilled++;
    if (this.#options.store) this.wanted = true;
  }

  /** Writes what is pending; also retries a failed spill write. */
  flush(): Promise<void> {
    return this.#file.flush();
  }

  /** Stops replaying: the rest of an unfinished replay stays in `.replaying` for the next start. */
  async stop(): Promise<void> {
    if (!this.#reader) return;
    await this.#reader.close().catch(noop);
    this.#reader = null;
    this.#batch = null;
  }

  /** Writes what is pending and closes the spill file. */
  close(): Promise<void> {
    return this.#file.close();
  }

  /** Replays one batch (opening the file first when no replay is under way). */
  async step(): Promise<ReplayStep> {
    const { store, batchSize, logger, health } = this.#options;
    if (!store) return "done";
    let batch: StoredUsageRecord[] | null;
    try {
      if (!this.#reader) {
        this.#reader = await this.#file.openReplay();
        if (!this.#reader) {
          this.wanted = this.#file.pending > 0;
          return "done";
        }
        logger.info("usage_spill_replay", { path: this.#reader.path });
      }
      batch = this.#batch ?? await this.#reader.next(batchSize);
      if (batch === null) {
        await this.#reader.finish();
        this.#reader = null;
        if (this.#replayedFromFile > 0) this.#options.onReplayed?.();
        this.#replayedFromFile = 0;
        return "more"; // a new spill file may have started meanwhile
      }
    } catch (e) {
      logger.error("usage_spill_replay_failed", { path: this.#file.path, error: errorText(e) });
      await this.#reader?.close().catch(noop);
      this.#reader = null;
      this.#batch = null;
      this.#notBefore = Date.now() + this.#options.retryMaxMs;
      return "error";
    }
    this.#batch = batch;
    try {
      await store.insert(batch);
      this.#batch = null;
      this.replayed += batch.length;
      this.#replayedFromFile += batch.length;
      health.succeeded();
      return "more";
    } catch (e) {
      health.failed(e, { records: batch.length, replay: true });
      return "failed";
    }
  }
}

function noop(): void {}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
