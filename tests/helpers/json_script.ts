/**
 * Runs a script in a Deno of its own, under the permission flags a test gives it, and reads the JSON it prints:
 * for what Deno does differently by its flags (how it hands paths to the system, whether node:sqlite reads URIs),
 * which one process cannot show for every set of flags.
 *
 * @module
 */
import assert from "node:assert/strict";

/** The JSON `script` printed on stdout, run with `flags` in `cwd`; fails the test when it exits with an error. */
export async function runJsonScript<T>(script: string, flags: readonly string[], cwd: string): Promise<T> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-lock", ...flags, script],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout)) as T;
}
