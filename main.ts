/**
 * Entry point: `deno run main.ts [serve|check|token new|version]`. All logic lives in `lib/`; this file only
 * picks the runtime edge and exits with the command's status.
 *
 * @module
 */
import { runCli } from "./lib/cli.ts";
import { currentRuntime } from "./lib/runtime/mod.ts";

if (import.meta.main) {
  const runtime = await currentRuntime();
  runtime.exit(await runCli(runtime, runtime.args()));
}
