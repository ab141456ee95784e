/**
 * The Deno runtime edge: serving through `node:http` (node_http_edge.ts), signals, process exit.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { serveNodeHttp } from "./node_http_edge.ts";
import type { Runtime } from "./types.ts";

const encoder = new TextEncoder();

/**
 * Writes all of `text`. If the reader of stdout has gone (a closed pipe), the text is dropped: a log line must
 * never turn into an uncaught error that keeps the process from shutting down.
 */
function writeAll(file: { writeSync(p: Uint8Array): number }, text: string) {
  let bytes = encoder.encode(text);
  try {
    while (bytes.byteLength > 0) bytes = bytes.subarray(file.writeSync(bytes));
  } catch (err) {
    if (!(err instanceof Deno.errors.BrokenPipe)) throw err;
  }
}

/**
 * `Deno.serve` is not used: it cannot bound stalled or idle connections and often misses a client that
 * disconnects before the response starts (see node_http_edge.ts). Node's HTTP server, which Deno runs, can.
 */
const serve = serveNodeHttp;

/** How long a burst of file events is gathered before one reload (editors write in several steps). */
const WATCH_DEBOUNCE_MS = 150;

function watchFile(path: string, handler: () => void): () => void {
  // Normalised (`./`, `..`, `//` gone): the events name the file by its normalised path.
  const absolute = resolve(path);
  const dir = dirname(absolute);
  // The directory is watched, not the file: a file replaced by rename is a new inode the old watch misses.
  const watcher = Deno.watchFs(dir, { recursive: false });
  let timer: ReturnType<typeof setTimeout> | undefined;
  (async () => {
    try {
      for await (const event of watcher) {
        if (!event.paths.some((p) => p === absolute)) continue;
        clearTimeout(timer);
        timer = setTimeout(handler, WATCH_DEBOUNCE_MS);
      }
    } catch {
      // The watcher was closed.
    }
  })();
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}

/** The runtime edge for Deno. */
export const denoRuntime: Runtime = {
  name: "deno",
  version: Deno.version.deno,
  args: () => [...Deno.args],
  env: () => Deno.env.toObject(),
  serve,
  onShutdownSignal(handler) {
    let fired = false;
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      Deno.addSignalListener(signal, () => {
        if (fired) return;
        fired = true;
        handler(signal);
      });
    }
  },
  onReloadSignal(handler) {
    Deno.addSignalListener("SIGHUP", handler);
  },
  watchFile,
  exit: (code) => Deno.exit(code),
  writeStdout: (text) => writeAll(Deno.stdout, text),
  writeStderr: (text) => writeAll(Deno.stderr, text),
};
