/**
 * Picks the runtime edge for the runtime we are on.
 *
 * @module
 */
import type { Runtime } from "./types.ts";

/** The runtime edge for the current process. */
export async function currentRuntime(): Promise<Runtime> {
  if ("Deno" in globalThis) return (await import("./deno.ts")).denoRuntime;
  throw new Error("Unsupported runtime: run the gateway with Deno (`deno task start`).");
}
