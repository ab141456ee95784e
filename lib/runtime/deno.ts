/**
 * The Deno runtime edge: serving through `node:http` (node_http_edge.ts), signals, file watching, process exit.
 *
 * @module
 */
import { type DirectoryWatch, watchResolvedFile } from "./file_watch.ts";
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

/**
 * Watchers still closing, by directory. Deno's watchers of one path share state: one opened on a directory that
 * was removed and made again, before the last watcher of that path has finished closing, hears nothing.
 */
const closing = new Map<string, Promise<void>>();

/**
 * Watches a directory for {@linkcode watchResolvedFile}; reads of its files (access events) are no change. A watch
 * that had to wait for an earlier one of its path to close reports one event once open, so that what changed
 * meanwhile is looked at.
 */
const watchDirectory: DirectoryWatch = (dir, onEvent) => {
  let watcher: Deno.FsWatcher | undefined;
  let stopped = false;
  /** Throws at once when the directory cannot be watched; the promise settles when the watcher is closed. */
  const open = (): Promise<void> => {
    const opened = Deno.watchFs(dir, { recursive: false });
    watcher = opened;
    return (async () => {
      try {
        for await (const event of opened) if (event.kind !== "access") onEvent();
      } catch {
        // The watcher was closed, or its directory removed.
      }
    })();
  };
  const earlier = closing.get(dir);
  const done = earlier === undefined ? open() : earlier.then(() => {
    if (stopped) return;
    let listening: Promise<void> | undefined;
    try {
      listening = open();
    } catch {
      // Gone meanwhile: the look this event starts sees that.
    }
    onEvent();
    return listening;
  });
  return () => {
    stopped = true;
    try {
      watcher?.close();
    } catch {
      // Already closed.
    }
    const closed = done.then(() => {}, () => {});
    closing.set(dir, closed);
    closed.then(() => {
      if (closing.get(dir) === closed) closing.delete(dir);
    });
  };
};

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
  watchFile: (path, handler) => watchResolvedFile(path, handler, watchDirectory),
  exit: (code) => Deno.exit(code),
  writeStdout: (text) => writeAll(Deno.stdout, text),
  writeStderr: (text) => writeAll(Deno.stderr, text),
};
