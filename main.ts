/**
 * Entry point: `deno run main.ts [serve|check|prices|token new|version]` (lib/cli.ts has the usage). All logic lives in `lib/`; this file only
 * picks the runtime edge and exits with the command's status.
 *
 * @module
 */
import { runCli } from "./lib/cli.ts";
import { currentRuntime } from "./lib/runtime/mod.ts";

if (import.meta.main) {
  const runtime = await currentRuntime();
  // Resolved here, beside the entry point: in a `bun build --compile` binary every module's import.meta.url
  // is the binary's own, and the workers (further entry points of the build) live at these same relative paths.
  const usageWorker = new URL("./lib/usage/sqlite_worker.ts", import.meta.url);
  const configWorker = new URL("./lib/config/config_worker.ts", import.meta.url);
  const serveWorker = new URL("./lib/workers/worker_main.ts", import.meta.url);
  const tokenWorker = new URL("./lib/usage/token_count_worker.ts", import.meta.url);
  runtime.exit(
    await runCli(runtime, runtime.args(), { usageWorker, configWorker, serveWorker, tokenWorker }),
  );
}
