/**
 * A failure to start serving, worded by the stage that failed: `cannot open the usage database …: …`, `cannot
 * listen on …: …`. The command line prints it as it is, so an operator is sent to the right place (every failure
 * used to read `Cannot serve on <host>:<port>`, even a usage database whose directory is a file); a failure of
 * any other stage is printed as `Cannot start: …`.
 *
 * @module
 */

/** A start failure whose message names its stage. */
export class StartError extends Error {
  override readonly name = "StartError";
}

/** `err`'s message, for a start failure's own. */
export function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
