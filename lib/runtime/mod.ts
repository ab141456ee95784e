/**
 * Picks the runtime edge for the runtime we are on. The edges are imported lazily so that each runtime only
 * evaluates its own (`deno.ts` reads `Deno.version` at load time).
 *
 * @module
 */
import type { Runtime } from "./types.ts";

/** The runtime edge for the current process. */
export async function currentRuntime(): Promise<Runtime> {
  if ("Deno" in globalThis) return (await import("./deno.ts")).denoRuntime;
  if ("Bun" in globalThis) return (await import("./bun.ts")).bunRuntime;
  throw new Error(
    "Unsupported runtime: run the gateway with Deno (`deno task start`) or Bun (`bun main.ts`).",
  );
}
