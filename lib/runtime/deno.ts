/**
 * The Deno runtime edge: `Deno.serve`, signals, process exit.
 *
 * @module
 */
import type { RunningServer, Runtime, ServeOptions } from "./types.ts";

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

const LAST_RESORT = JSON.stringify({
  error: {
    message: "The gateway had an internal error.",
    type: "server_error",
    param: null,
    code: "internal_error",
  },
});

function serve(options: ServeOptions): Promise<RunningServer> {
  return new Promise((resolve) => {
    const server = Deno.serve({
      hostname: options.hostname,
      port: options.port,
      onListen: () => {},
      // The handler never throws; this only guards against a bug turning into Deno's default error page.
      onError: () =>
        new Response(LAST_RESORT, { status: 500, headers: { "content-type": "application/json" } }),
    }, options.handler);
    const addr = server.addr;
    resolve({
      hostname: addr.hostname,
      port: addr.port,
      async shutdown(graceMs: number) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        const deadline = new Promise<void>((r) => timer = setTimeout(r, graceMs));
        await Promise.race([server.shutdown(), deadline]);
        clearTimeout(timer);
      },
    });
  });
}

/** How long a burst of file events is gathered before one reload (editors write in several steps). */
const WATCH_DEBOUNCE_MS = 150;

function watchFile(path: string, handler: () => void): () => void {
  const absolute = path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
  const dir = absolute.slice(0, absolute.lastIndexOf("/")) || "/";
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
