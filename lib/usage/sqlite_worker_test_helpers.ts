/**
 * Shared by the SQLite worker store's tests: a fresh directory for a database file of their own.
 *
 * @module
 */

/** A new temporary directory and the usage database path in it; the caller removes the directory. */
export async function tempDb(): Promise<{ dir: string; path: string }> {
  const dir = await Deno.makeTempDir({ prefix: "usage-worker-" });
  return { dir, path: `${dir}/usage.sqlite` };
}
