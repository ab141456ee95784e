/**
 * The flags `serve` takes beyond `--config` (`--port` or `$PORT`, `--host`, `--workers`), read one way for `serve`
 * and `check`: `check` honoured `--port` but ignored `--host` and `--workers`, so `check --workers 0` said valid
 * of a command line `serve` refuses. Each reader returns the value, or the line that refuses it.
 *
 * @module
 */
import { isListenHost, LISTEN_HOST_RULE } from "./config/listen_host.ts";

/** A flag's value, or the line refusing it. */
export type FlagResult<T> = { readonly ok: true; readonly value: T } | {
  readonly ok: false;
  readonly message: string;
};

function parsePort(text: string | undefined): number | null | undefined {
  if (text === undefined || text === "") return undefined;
  const port = Number(text);
  return Number.isInteger(port) && port >= 0 && port <= 65535 ? port : null;
}

/** The port `serve` listens on instead of `server.port` (`--port`, else `$PORT`); undefined: the file's. */
export function portOverride(
  flag: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
): FlagResult<number | undefined> {
  const port = parsePort(flag ?? env.PORT);
  if (port !== null) return { ok: true, value: port };
  const from = flag !== undefined ? "--port" : "$PORT";
  return {
    ok: false,
    message: `Invalid port ${JSON.stringify(flag ?? env.PORT)} (${from}): use a number from 0 to 65535.`,
  };
}

/** `--host`, held to `server.host`'s rule; undefined: the file's. */
export function hostOverride(flag: string | undefined): FlagResult<string | undefined> {
  if (flag === undefined || isListenHost(flag)) return { ok: true, value: flag };
  return { ok: false, message: `Invalid --host: ${LISTEN_HOST_RULE}.` };
}

/** `--workers`, else `server.workers`: a count from 1 to 256, or `auto` (one per core). */
export function workerCount(given: string | number): FlagResult<number> {
  if (given === "auto") return { ok: true, value: Math.max(1, navigator.hardwareConcurrency ?? 1) };
  const n = Number(given);
  return Number.isInteger(n) && n >= 1 && n <= 256
    ? { ok: true, value: n }
    : { ok: false, message: "Invalid --workers: use a number from 1 to 256, or auto." };
}
