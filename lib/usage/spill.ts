/**
 * The spill file: where usage records go when the queue is full or the store keeps failing at shutdown, so
 * that they are never dropped, and where they are replayed from into the store.
 *
 * Replay is crash-safe: the spill file is first renamed to `<path>.replaying` (between appends, so no write
 * is lost to the rename), read in batches and inserted, and deleted only once every batch is stored. New
 * spills meanwhile go to a fresh `<path>`. A crash or shutdown mid-replay leaves `.replaying` behind, and the
 * next replay starts with it; batches already inserted are ignored by the store (UNIQUE `uid`), so the worst
 * case is a duplicate insert attempt, never a lost record.
 *
 * A spill path (or its `.replaying` name) that is a directory is refused, never renamed or removed: the replay
 * fails, says so, and leaves it as it is (`check` and `serve` refuse such a `usage.spill` before it gets here).
 *
 * @module
 */
import { open, rename, stat, unlink } from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import type { Logger } from "../log.ts";
import { isObject } from "../openai/types.ts";
import { JsonlAppender } from "./jsonl_sink.ts";
import { entryLine, type StoredUsageRecord, type UsageEntry } from "./store.ts";

const READ_CHUNK = 1 << 20;

/** Reads a spill file being replayed, batch by batch. */
export interface SpillReader {
  /** The `.replaying` file. */
  readonly path: string;
  /** Up to `max` more records, or null at the end of the file. Unparsable lines are skipped and counted. */
  next(max: number): Promise<StoredUsageRecord[] | null>;
  /** Every record was stored: closes and deletes the file. */
  finish(): Promise<void>;
  /** Stops early and keeps the file, to be replayed again from the start next time. */
  close(): Promise<void>;
}

/** The spill file at `path`: unbounded, serialized appends (disk is the last resort) plus replay. */
export class SpillFile {
  readonly #appender: JsonlAppender<UsageEntry>;
  readonly #path: string;
  readonly #logger: Logger;

  /** `path` is `usage.spill`; `<path>.replaying` is used during replay. */
  constructor(path: string, logger: Logger) {
    this.#path = path;
    this.#logger = logger;
    this.#appender = new JsonlAppender<UsageEntry>(path, {
      logger,
      name: "usage_spill",
      serialize: entryLine,
    });
  }

  /** The spill file's path. */
  get path(): string {
    return this.#path;
  }

  /** The file a replay reads from. */
  get replayingPath(): string {
    return replayingPathOf(this.#path);
  }

  /** Records spilled but not yet written to disk. */
  get pending(): number {
    return this.#appender.pending;
  }

  /** Appends one record (O(1), never throws; serializing and writing happen in the background). */
  append(entry: UsageEntry): void {
    this.#appender.append(entry);
  }

  /** Writes what was appended so far (one attempt; failed records stay buffered for the next flush). */
  flush(): Promise<void> {
    return this.#appender.flush();
  }

  /** Flushes, retrying a little; whatever cannot be written is logged as lost. */
  close(): Promise<void> {
    return this.#appender.close();
  }

  /** True when there is something to replay on disk (the spill file or a leftover `.replaying`). */
  async hasData(): Promise<boolean> {
    return (await fileSize(this.replayingPath)) !== null || ((await fileSize(this.#path)) ?? 0) > 0;
  }

  /**
   * Starts a replay: a leftover `.replaying` file first, else the spill file renamed to `.replaying` (while
   * no append is in flight). Null when there is nothing to replay.
   */
  openReplay(): Promise<SpillReader | null> {
    return this.#appender.exclusive(async () => {
      if ((await fileSize(this.replayingPath)) !== null) return await this.#reader(this.replayingPath);
      const size = await fileSize(this.#path);
      if (size === null) return null;
      if (size === 0) {
        await unlink(this.#path).catch(() => {});
        return null;
      }
      await rename(this.#path, this.replayingPath);
      return await this.#reader(this.replayingPath);
    });
  }

  async #reader(path: string): Promise<SpillReader> {
    const handle: FileHandle = await open(path, "r");
    const logger = this.#logger;
    const decoder = new TextDecoder();
    const buf = new Uint8Array(READ_CHUNK);
    let position = 0;
    let partial = "";
    let lines: string[] = [];
    let eof = false;
    let skipped = 0;
    let closed = false;

    const parse = (line: string): StoredUsageRecord | null => {
      if (line.trim() === "") return null;
      try {
        const value: unknown = JSON.parse(line);
        if (isStoredUsageRecord(value)) return value;
      } catch {
        // a line cut short by a crash or a failed write: its full copy, if any, follows
      }
      skipped++;
      return null;
    };
    const fill = async () => {
      const { bytesRead } = await handle.read(buf, 0, buf.length, position);
      position += bytesRead;
      if (bytesRead === 0) {
        eof = true;
        partial += decoder.decode();
        if (partial !== "") lines.push(partial);
        partial = "";
        return;
      }
      const text = partial + decoder.decode(buf.subarray(0, bytesRead), { stream: true });
      const parts = text.split("\n");
      partial = parts.pop() ?? "";
      lines = lines.length ? lines.concat(parts) : parts;
    };
    const shut = async () => {
      if (closed) return;
      closed = true;
      await handle.close();
      if (skipped > 0) logger.warn("usage_spill_lines_skipped", { path, lines: skipped });
    };

    return {
      path,
      async next(max) {
        const out: StoredUsageRecord[] = [];
        while (out.length < max) {
          if (lines.length === 0) {
            if (eof) break;
            await fill();
            continue;
          }
          const take = lines.splice(0, Math.min(lines.length, max - out.length));
          for (const line of take) {
            const record = parse(line);
            if (record) out.push(record);
          }
        }
        return out.length === 0 && eof && lines.length === 0 ? null : out;
      },
      async finish() {
        await shut();
        await unlink(path);
      },
      close: shut,
    };
  }
}

/** Where a replay reads the spill file at `path` from: the name it is renamed to. */
export function replayingPathOf(path: string): string {
  return `${path}.replaying`;
}

/**
 * The file's size, or null when it does not exist. A directory is refused (thrown), so that nothing renames,
 * reads or deletes it as a spill file.
 */
async function fileSize(path: string): Promise<number | null> {
  try {
    const found = await stat(path);
    if (found.isDirectory()) throw new Error(`${path} is a directory, not a spill file: it is left as it is`);
    return found.size;
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return null;
    throw e;
  }
}

/** Enough of a usage record to be worth inserting (the store coerces the rest). */
function isStoredUsageRecord(value: unknown): value is StoredUsageRecord {
  return isObject(value) && typeof value.time === "string" && typeof value.request_id === "string";
}
