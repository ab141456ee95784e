/**
 * Whether the SQLite usage database can be opened where `usage.sqlite` says, found without writing anything: what
 * `check` asks, so it refuses the config `serve` would not start with. Serving creates the file's directory (and
 * those above it) and the file, and SQLite in WAL mode writes `-wal` and `-shm` files beside it, so the nearest
 * directory that exists must be writable, nothing on the way may be a file, and an existing database must be a
 * writable file.
 *
 * Writability is asked of the system (`access`), never tried. Where the runtime cannot say (Deno answers from the
 * mode bits, and needs `--allow-sys=uid` for it; the root user writes past them), nothing is claimed: the check
 * refuses only what it knows `serve` would fail on.
 *
 * @module
 */
import { accessSync, constants } from "node:fs";
import { stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import process from "node:process";

/** Why the usage database cannot be at `path` (a sentence for `usage.sqlite: …`), or null when it can. */
export async function sqliteLocationProblem(path: string): Promise<string | null> {
  if (path === ":memory:" || path.startsWith("file:")) return null;
  const file = await kindOf(path);
  if (file === "directory") return `${path} is a directory, not a database file`;
  if (file === "file" && denied(path, constants.R_OK | constants.W_OK)) {
    return `${path} is not writable by this user`;
  }
  const dir = dirname(resolve(path));
  let existing = dir;
  for (let kind = await kindOf(existing); kind !== "directory"; kind = await kindOf(existing)) {
    if (kind === "file") {
      return existing === dir
        ? `${dir} is a file, not a directory: the usage database cannot go in it`
        : `${existing} is a file, so the directory ${dir} cannot be created for the usage database`;
    }
    const parent = dirname(existing);
    if (parent === existing) return null;
    existing = parent;
  }
  if (denied(existing, constants.W_OK | constants.X_OK)) {
    return existing === dir
      ? `the directory ${dir} is not writable by this user (the database and its -wal and -shm files go there)`
      : `the directory ${dir} cannot be created: ${existing} is not writable by this user`;
  }
  return null;
}

/** "directory", "file" (anything else that exists), or "missing" (also when it cannot be looked at). */
async function kindOf(path: string): Promise<"directory" | "file" | "missing"> {
  try {
    return (await stat(path)).isDirectory() ? "directory" : "file";
  } catch {
    // ENOTDIR too: a file on the way, which the walk up finds.
    return "missing";
  }
}

/**
 * True only when the system says the access is denied; false when it allows it or cannot say. The synchronous
 * call, because Deno's promise form throws its permission error (no `--allow-sys=uid`) past the promise.
 */
function denied(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return false;
  } catch (err) {
    const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
    if (code === "EROFS") return true;
    if (code !== "EACCES" && code !== "EPERM") return false;
    return !isRoot();
  }
}

/** The root user writes past the mode bits (Deno's `access` reads only those); false when it cannot be told. */
function isRoot(): boolean {
  try {
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}
