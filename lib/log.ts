/**
 * Structured logging: one JSON object per line, so log shippers need no parsing rules. Callers pass only
 * fields that are safe to print; nothing here should ever receive a token, a provider key or prompt text. As a
 * last line of defence (error codes and messages can come from upstreams, which may quote a key), the JSON
 * logger masks every secret of the current config in every line before it is written.
 *
 * @module
 */
import type { Scrubber } from "./secrets/scrubber.ts";
import { parseScrubbed } from "./secrets/scrub_json.ts";
import { isoNow } from "./timers/iso_now.ts";

/** A log field value: what JSON can carry. */
export type LogValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly LogValue[]
  | { readonly [key: string]: LogValue };

/**
 * Writes one event. `msg` is a stable event name such as `"request"` or `"config_invalid"`; `fields` must not
 * use the names `time`, `level` or `msg`.
 */
export interface Logger {
  info(msg: string, fields?: Record<string, LogValue>): void;
  warn(msg: string, fields?: Record<string, LogValue>): void;
  error(msg: string, fields?: Record<string, LogValue>): void;
  /** Writes out anything buffered; call before the process exits. */
  flush?(): void;
  /**
   * Makes every line pass `source()`'s scrubber, read per line so a config reload swaps it (the server wires it
   * to the current config once the reloader exists).
   */
  scrubWith?(source: () => Scrubber): void;
}

/**
 * Logs a failure of the gateway's own (anything thrown that is not a `GatewayError`) as `unhandled_error`: its
 * name and message, never the request's content. The client gets only a generic 500 or `internal_error` event,
 * so this line is the one trace of the bug; the error boundary and the stream bodies both write it.
 */
export function logUnhandled(logger: Logger, requestId: string, err: unknown): void {
  logger.error("unhandled_error", {
    request_id: requestId,
    error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
  });
}

/** How long log lines may wait to be written together: one write per burst instead of one per request. */
const LOG_FLUSH_MS = 10;
/** Lines buffered before a write happens regardless of the timer. */
const LOG_FLUSH_LINES = 256;

/**
 * A logger writing JSON lines through `write` (one call per line, ending in "\n"). With `buffered`, lines are
 * gathered for up to 10 ms and written in one call, which takes a system call per request off the hot path;
 * warnings and errors are written at once, and `flush()` writes the rest (the server calls it on shutdown).
 *
 * With a `scrubber`, each serialized line is scanned once (a linear pass that allocates nothing when it finds
 * nothing); a line that holds a secret, whole or in part, is serialized again with every string scrubbed, keys
 * as well as values, so the mask never breaks the JSON.
 */
export function createJsonLogger(
  write: (text: string) => void,
  options: { buffered?: boolean; scrubber?: () => Scrubber } = {},
): Logger {
  let scrubber = options.scrubber;
  let pending: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join("");
    pending = [];
    write(text);
  };
  const emit = (level: string, msg: string, fields?: Record<string, LogValue>) => {
    // The fields are serialized as they are and spliced after the fixed keys: copying them into a new object
    // first (a spread) cost more than the serialization itself for the access record.
    const time = isoNow();
    let head = `{"time":"${time}","level":"${level}","msg":${JSON.stringify(msg)}`;
    let rest = fields === undefined ? "{}" : JSON.stringify(fields);
    const secrets = scrubber?.();
    if (secrets !== undefined && secrets.size > 0 && (secrets.test(rest) || secrets.test(msg))) {
      head = `{"time":"${time}","level":"${level}","msg":${JSON.stringify(secrets.scrub(msg))}`;
      // From the line as serialized, keys scrubbed too (a field keyed by what an upstream sent): only lines
      // that hold a secret pay for the parse.
      rest = JSON.stringify(parseScrubbed(rest, (text) => secrets.scrub(text)));
    }
    const line = rest.length > 2 ? `${head},${rest.slice(1)}\n` : `${head}}\n`;
    if (!options.buffered || level !== "info") {
      flush();
      write(line);
      return;
    }
    pending.push(line);
    if (pending.length >= LOG_FLUSH_LINES) flush();
    else timer ??= setTimeout(flush, LOG_FLUSH_MS);
  };
  return {
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    flush,
    scrubWith(source) {
      scrubber = source;
    },
  };
}

/** A logger that keeps events in memory, for tests that assert on what was logged. */
export function createMemoryLogger(): Logger & { lines: Record<string, LogValue>[] } {
  const lines: Record<string, LogValue>[] = [];
  const push = (level: string) => (msg: string, fields?: Record<string, LogValue>) => {
    lines.push({ level, msg, ...fields });
  };
  return { lines, info: push("info"), warn: push("warn"), error: push("error") };
}
