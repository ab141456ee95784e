/**
 * Appending JSON lines to a file off the request path: items are buffered and written in batches by one
 * serialized writer, so lines never interleave and order is kept. Used for the optional `usage.jsonl` copy of
 * every record and, unbounded, for the spill file (`spill.ts`).
 *
 * A failed write keeps its items at the front of the buffer and is retried by the next `flush()` (the
 * pipeline calls it on every tick). A write that failed part-way (a full disk) leaves a torn line, and a
 * process that crashed mid-append leaves one at the file's end: the first write to a file, and the first after
 * a failure, reads the file's last byte and starts on a new line when it is not one, so the torn fragment
 * stays a line of its own (readers skip it; the retry writes its records whole, and the store de-duplicates
 * on `uid`) instead of swallowing the first record written after it.
 *
 * @module
 */
import { appendFile, open } from "node:fs/promises";
import { dirname } from "node:path";
import { makeDirectories } from "./make_directories.ts";
import type { Logger } from "../log.ts";

/** How a `JsonlAppender` is set up. */
export interface JsonlAppenderOptions<T> {
  logger: Logger;
  /** Prefix of log events, e.g. `usage_jsonl` → `usage_jsonl_write_failed`. */
  name: string;
  /** Most items waiting to be written; past it `onOverflow` gets them (or they are dropped). Default: no bound. */
  maxBuffered?: number;
  /** Receives items refused by a full buffer; without it they are dropped, counted and logged. */
  onOverflow?: (item: T) => void;
  /** One line of JSON for an item (no newline); `JSON.stringify` by default. */
  serialize?: (item: T) => string;
  /** How many consecutive failed attempts `close()` makes before giving up. Default 3. */
  closeAttempts?: number;
  /** Appends `text` to the file at `path`; `appendFile` by default (tests inject one that fails part-way). */
  appendText?: (path: string, text: string) => Promise<void>;
}

/** A buffered, serialized JSON-lines writer for one file. */
export class JsonlAppender<T> {
  readonly #path: string;
  readonly #options: JsonlAppenderOptions<T>;
  #buffer: T[] = [];
  #chain: Promise<void> = Promise.resolve();
  #scheduled = false;
  #dirReady = false;
  /** Whether the file may not end with a newline: before the first write, and after a failed one. */
  #tailUnknown = true;
  #failing = 0;
  #written = 0;
  #failures = 0;
  #dropped = 0;

  /** Appends to `path` (its parent directories are created on the first write). */
  constructor(path: string, options: JsonlAppenderOptions<T>) {
    this.#path = path;
    this.#options = options;
  }

  /** The file written to. */
  get path(): string {
    return this.#path;
  }

  /** Items appended but not yet written. */
  get pending(): number {
    return this.#buffer.length;
  }

  /** Counters for tests and metrics: items written, failed write attempts, items dropped on overflow. */
  stats(): { written: number; pending: number; failures: number; dropped: number } {
    return {
      written: this.#written,
      pending: this.#buffer.length,
      failures: this.#failures,
      dropped: this.#dropped,
    };
  }

  /** Buffers `item` and schedules a write; O(1), never throws, never waits. */
  append(item: T): void {
    const max = this.#options.maxBuffered ?? Infinity;
    if (this.#buffer.length >= max) {
      if (this.#options.onOverflow) {
        this.#options.onOverflow(item);
      } else {
        if (this.#dropped++ === 0) {
          this.#options.logger.warn(`${this.#options.name}_overflow`, {
            path: this.#path,
            max_buffered: max,
          });
        }
      }
      return;
    }
    this.#buffer.push(item);
    this.#schedule();
  }

  /** Buffers every item of `items`, in order. */
  appendMany(items: readonly T[]): void {
    for (const item of items) this.append(item);
  }

  /**
   * Writes everything appended so far (one attempt). Resolves when written or when the attempt failed — then
   * the items stay buffered for the next flush; it never rejects.
   */
  flush(): Promise<void> {
    this.#schedule();
    return this.#chain;
  }

  /**
   * Runs `fn` between writes, with no write in flight: for renaming the file safely (spill replay). Writes
   * scheduled before this call complete first.
   */
  exclusive<R>(fn: () => Promise<R>): Promise<R> {
    const result = this.#chain.then(fn);
    this.#chain = result.then(() => {}, () => {});
    return result;
  }

  /** Flushes, retrying a few times on failure; items still unwritten afterwards are logged as lost. */
  async close(): Promise<void> {
    const attempts = this.#options.closeAttempts ?? 3;
    for (let i = 0; i < attempts && this.#buffer.length > 0; i++) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 50 * i));
      await this.flush();
    }
    await this.#chain;
    if (this.#buffer.length > 0) {
      this.#options.logger.error(`${this.#options.name}_lost`, {
        path: this.#path,
        records: this.#buffer.length,
      });
    }
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#chain = this.#chain.then(() => {
      this.#scheduled = false;
      return this.#writeBuffered();
    });
  }

  async #writeBuffered(): Promise<void> {
    if (this.#buffer.length === 0) return;
    const items = this.#buffer;
    this.#buffer = [];
    const serialize = this.#options.serialize ?? JSON.stringify;
    let text = "";
    let unserializable = 0;
    for (const item of items) {
      try {
        text += serialize(item) + "\n";
      } catch {
        unserializable++; // it can never be written: dropping it keeps the rest flowing
      }
    }
    if (unserializable > 0) {
      this.#dropped += unserializable;
      this.#options.logger.error(`${this.#options.name}_unserializable`, {
        path: this.#path,
        items: unserializable,
      });
    }
    try {
      if (!this.#dirReady) {
        await makeDirectories(dirname(this.#path));
        this.#dirReady = true;
      }
      if (this.#tailUnknown) {
        if (!await endsLine(this.#path)) text = "\n" + text;
        this.#tailUnknown = false;
      }
      await (this.#options.appendText ?? appendFile)(this.#path, text);
      this.#written += items.length;
      if (this.#failing > 0) {
        this.#options.logger.info(`${this.#options.name}_recovered`, {
          path: this.#path,
          failed_attempts: this.#failing,
        });
        this.#failing = 0;
      }
    } catch (e) {
      // keep them, in order, ahead of anything appended meanwhile
      this.#buffer = items.concat(this.#buffer);
      this.#dirReady = false;
      this.#tailUnknown = true; // part of the text may have been written
      this.#failures++;
      if (this.#failing++ === 0) {
        this.#options.logger.error(`${this.#options.name}_write_failed`, {
          path: this.#path,
          pending: this.#buffer.length,
          error: e instanceof Error ? e.message : String(e),
        });
      }
    }
  }
}

/** Whether the file at `path` is absent, empty, or ends with a newline: the next line starts on a line of its own. */
async function endsLine(path: string): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (e) {
    if ((e as { code?: unknown }).code === "ENOENT") return true;
    throw e;
  }
  try {
    const { size } = await handle.stat();
    if (size === 0) return true;
    const last = new Uint8Array(1);
    await handle.read(last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    await handle.close();
  }
}

/**
 * The optional `usage.jsonl` export: every usage record (plus its `uid`) as one line, in write order.
 * Bounded by `maxBuffered` so a stalled disk cannot grow memory; what overflows goes to `onOverflow`.
 */
export function createJsonlSink<T>(
  path: string,
  options: {
    logger: Logger;
    maxBuffered: number;
    onOverflow?: (item: T) => void;
    serialize?: (item: T) => string;
  },
): JsonlAppender<T> {
  return new JsonlAppender<T>(path, { name: "usage_jsonl", ...options });
}
