/**
 * Structured logging: one JSON object per line, so log shippers need no parsing rules. Callers pass only
 * fields that are safe to print; nothing here ever receives a token, a provider key or prompt text.
 *
 * @module
 */

/** A log field value: what JSON can carry. */
export type LogValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | readonly LogValue[]
  | { readonly [key: string]: LogValue };

/** Writes one event. `msg` is a stable event name such as `"request"` or `"config_invalid"`. */
export interface Logger {
  info(msg: string, fields?: Record<string, LogValue>): void;
  warn(msg: string, fields?: Record<string, LogValue>): void;
  error(msg: string, fields?: Record<string, LogValue>): void;
}

/** A logger writing JSON lines through `write` (stdout by default). */
export function createJsonLogger(write: (line: string) => void = (line) => console.log(line)): Logger {
  const emit = (level: string, msg: string, fields?: Record<string, LogValue>) => {
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }));
  };
  return {
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
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
