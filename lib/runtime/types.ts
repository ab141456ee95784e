/**
 * What the rest of the gateway needs from a JavaScript runtime. Only `lib/runtime/` implements it, so the
 * gateway runs unchanged on Deno and Bun.
 *
 * @module
 */

/** A listening HTTP server. */
export interface RunningServer {
  readonly hostname: string;
  readonly port: number;
  /** Stops accepting connections, lets in-flight requests and streams finish for up to `graceMs`. */
  shutdown(graceMs: number): Promise<void>;
}

/** Options for {@linkcode Runtime.serve}. */
export interface ServeOptions {
  hostname: string;
  port: number;
  handler: (request: Request) => Promise<Response>;
}

/** The runtime edge. */
export interface Runtime {
  readonly name: "deno" | "bun";
  readonly version: string;
  args(): string[];
  env(): Record<string, string | undefined>;
  serve(options: ServeOptions): Promise<RunningServer>;
  /** Calls `handler` once on SIGTERM or SIGINT. */
  onShutdownSignal(handler: (signal: string) => void): void;
  /** Calls `handler` on every SIGHUP (the conventional "reload your config"). */
  onReloadSignal(handler: () => void): void;
  /**
   * Calls `handler` when the file at `path` changes, also when an editor or a deploy tool replaces it by
   * renaming a new file over it. Bursts of events are coalesced. Returns a function that stops watching.
   */
  watchFile(path: string, handler: () => void): () => void;
  exit(code: number): never;
  writeStdout(text: string): void;
  writeStderr(text: string): void;
}
