/**
 * The keys a running gateway takes only at start, and which of them a reloaded config changed: what needs a
 * restart. A reload that changes one succeeds and keeps what the gateway started with (the listening socket, the
 * usage database, the shared stores, the exporters), so the `config_reloaded` log line and `/readyz` say which
 * (`restart_required`), rather than leave the operator believing the change took.
 *
 * Not listed, because a reload changes them: `server.connections.body_timeout` (read per request, for the bodies
 * read after the reload) and the `server.connections.websocket_*` keys (read at each WebSocket's handshake).
 * `keep_alive_timeout` and `send_timeout` are listed: a WebSocket opened after the reload takes the new ones, but
 * every HTTP connection keeps the start's.
 *
 * @module
 */
import type { ResolvedConfig } from "./types.ts";

/** Every key taken only at start, as a dotted path into the resolved config (a section stands for all it holds). */
export const START_ONLY_KEYS: readonly string[] = [
  "server.host",
  "server.port",
  "server.workers",
  "server.connections.header_timeout",
  "server.connections.keep_alive_timeout",
  "server.connections.send_timeout",
  "server.connections.max_connections",
  "usage",
  "responses",
  "cache",
  "telemetry",
  "alerts",
  "redis",
  "postgres",
];

/**
 * The keys of {@linkcode START_ONLY_KEYS} whose value in `next` differs from `started` (the config the gateway
 * started with, not the previous reload's: a change still not in effect is named again), in that order. Key order
 * inside a value does not count.
 */
export function restartRequired(started: ResolvedConfig, next: ResolvedConfig): string[] {
  return START_ONLY_KEYS.filter((key) => !sameValue(valueAt(started, key), valueAt(next, key)));
}

function valueAt(config: ResolvedConfig, key: string): unknown {
  let value: unknown = config;
  for (const segment of key.split(".")) {
    value = typeof value === "object" && value !== null
      ? (value as Record<string, unknown>)[segment]
      : undefined;
  }
  return value;
}

/** Deep equality of config data (plain objects, arrays, scalars); `undefined` and `null` are both "absent". */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b || (a == null && b == null)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const keysB = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((k) =>
    Object.hasOwn(b, k) && sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
  );
}

/**
 * The lines of `lines` (every path of a file, dot-joined: `yaml_tree.ts`) at a start-only key or under one: what a
 * config keeps (`ResolvedConfig.lines`) so the issues found at start, which read the resolved config rather than
 * the file (`start_checks.ts`: a usage file's place, a telemetry variable), carry their line as the file's own do.
 */
export function startOnlyLines(lines: ReadonlyMap<string, number>): Record<string, number> {
  const kept: Record<string, number> = {};
  for (const [path, line] of lines) {
    if (START_ONLY_KEYS.some((key) => path === key || path.startsWith(`${key}.`))) kept[path] = line;
  }
  return kept;
}

/**
 * The line of the deepest key on the dotted `path` that `config`'s file has (a key left at its default points at
 * its section, as the loader's issues do), or undefined: not in the file, or a config built without one.
 */
export function startOnlyLine(config: ResolvedConfig, path: string): number | undefined {
  const lines = config.lines;
  if (lines === undefined) return undefined;
  for (let at = path; at !== ""; at = at.includes(".") ? at.slice(0, at.lastIndexOf(".")) : "") {
    if (Object.hasOwn(lines, at)) return lines[at];
  }
  return undefined;
}
