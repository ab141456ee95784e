/**
 * The runtime the in-process benches start a gateway on: no socket, the request handler captured so the bench
 * calls it directly, the log counted and dropped. One definition for every in-process bench (hot path, A/B,
 * cache, telemetry), so what they measure is started the same way.
 *
 * @module
 */
import type { Runtime, ServeOptions } from "../../lib/runtime/types.ts";

/** A runtime whose `serve` captures the handler; `handler()` gives it once the gateway has started. */
export function capturingRuntime(env: Record<string, string>): {
  runtime: Runtime;
  handler: () => (request: Request) => Promise<Response>;
  logBytes: () => number;
} {
  let captured: ((request: Request) => Promise<Response>) | undefined;
  let bytes = 0;
  const runtime: Runtime = {
    name: "deno",
    version: Deno.version.deno,
    args: () => [],
    env: () => env,
    serve(options: ServeOptions) {
      captured = options.handler;
      return Promise.resolve({ hostname: "127.0.0.1", port: 0, shutdown: () => Promise.resolve() });
    },
    onShutdownSignal() {},
    onReloadSignal() {},
    watchFile: () => () => {},
    exit(code: number): never {
      throw new Error(`exit ${code}`);
    },
    writeStdout(text: string) {
      bytes += text.length;
    },
    writeStderr() {},
  };
  return {
    runtime,
    handler() {
      if (captured === undefined) throw new Error("startServer did not serve");
      return captured;
    },
    logBytes: () => bytes,
  };
}
