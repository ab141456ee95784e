/**
 * Makes a directory and the ones above it that are missing, as `mkdir -p` does, for the usage files
 * (the SQLite database, the JSONL copy and the spill file).
 *
 * Node's `mkdir(…, { recursive: true })` is not used: Deno's implementation of it first looks at every directory
 * on the way up from the root, so under `deno task start` (which may read only config/, data/ and lib/) it asked
 * the operator's terminal for read access to the working directory on the first start of a fresh checkout, with
 * the gateway stopped until answered. This walks up only as far as a directory that exists, one `mkdir` at a time,
 * touching nothing outside the path it makes.
 *
 * As `mkdir -p`, it fails when something on the way is not a directory: a file (ENOTDIR, or EEXIST for the
 * directory itself), or a link that leads nowhere (a volume not mounted: `mkdir` says EEXIST for the link and
 * ENOENT below it, which a retry would meet forever).
 *
 * @module
 */
import { mkdirSync, statSync } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";

/** The system error's code (`ENOENT`, `EEXIST`), if it has one. */
function codeOf(err: unknown): unknown {
  return typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
}

/** Makes `dir` and the directories above it that are missing; one that exists is fine. */
export async function makeDirectories(dir: string): Promise<void> {
  try {
    await mkdir(dir);
  } catch (err) {
    const code = codeOf(err);
    // Something is there: fine if it is a directory (or a link to one); `stat` fails for a dangling link.
    if (code === "EEXIST" && (await stat(dir)).isDirectory()) return;
    const parent = dirname(dir);
    if (code !== "ENOENT" || parent === dir) throw err;
    await makeDirectories(parent);
    await mkdir(dir).catch(async (again) => {
      // Made meanwhile by another writer: fine as above.
      if (codeOf(again) !== "EEXIST" || !(await stat(dir)).isDirectory()) throw again;
    });
  }
}

/** {@linkcode makeDirectories}, on the calling thread (the SQLite store opens synchronously, in its worker). */
export function makeDirectoriesSync(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (err) {
    const code = codeOf(err);
    if (code === "EEXIST" && statSync(dir).isDirectory()) return;
    const parent = dirname(dir);
    if (code !== "ENOENT" || parent === dir) throw err;
    makeDirectoriesSync(parent);
    try {
      mkdirSync(dir);
    } catch (again) {
      if (codeOf(again) !== "EEXIST" || !statSync(dir).isDirectory()) throw again;
    }
  }
}
