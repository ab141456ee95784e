/**
 * Whether a file the gateway writes can be at a path, found without writing anything: what `check`, `serve`
 * before it listens and a reload of a start-only key ask of the usage database (`sqlite_location.ts`), the JSONL
 * copy and the spill file (`usage_locations.ts`). Serving creates the file's directory (and those above it) and
 * the file, so the nearest directory that exists must be writable, nothing on the way may be a file, and an
 * existing file must be a writable file, not a directory.
 *
 * Writability is asked of the system (`access`), never tried. Where the runtime cannot say (Deno answers from the
 * mode bits, and needs `--allow-sys=uid` for it; the root user writes past them), nothing is claimed: the check
 * refuses only what it knows `serve` would fail on.
 *
 * @module
 */
import { accessSync, constants } from "node:fs";
import { stat } from "node:fs/promises";
import { dirname } from "node:path";
import process from "node:process";
import { mayAskAccess, mayLookAt } from "../runtime/path_permission.ts";
import { handedPath, placeOf } from "./system_path.ts";

/** How the problems of one kind of file are worded. */
export interface FileWords {
  /** What the path should be: `a database file`, `a spill file`. */
  readonly file: string;
  /** The file as the object of a sentence: `the usage database`, `the spill file`. */
  readonly name: string;
  /** Said after a directory that is not writable: ` (the database and its -wal and -shm files go there)`. */
  readonly dirNote?: string;
}

/** Why the file cannot be at `path` (a sentence for `usage.<key>: …`), or null when it can. */
export async function fileLocationProblem(path: string, words: FileWords): Promise<string | null> {
  const file = await kindOf(path);
  if (file === "unknown") return null;
  if (file === "directory") return `${path} is a directory, not ${words.file}`;
  if (file === "file" && denied(path, constants.R_OK | constants.W_OK)) {
    return `${path} is not writable by this user`;
  }
  // As the runtime hands it on: with `..` kept, the system takes `link/..` as above the link's target.
  const dir = dirname(handedPath(path));
  let existing = dir;
  for (let kind = await kindOf(existing); kind !== "directory"; kind = await kindOf(existing)) {
    // A directory Deno's permissions do not let the gateway look at: nothing is claimed.
    if (kind === "unknown") return null;
    if (kind === "file") {
      return existing === dir
        ? `${dir} is a file, not a directory: ${words.name} cannot go in it`
        : `${existing} is a file, so the directory ${dir} cannot be created for ${words.name}`;
    }
    const parent = dirname(existing);
    if (parent === existing) return null;
    existing = parent;
  }
  if (denied(existing, constants.W_OK | constants.X_OK)) {
    return existing === dir
      ? `the directory ${dir} is not writable by this user${words.dirNote ?? ""}`
      : `the directory ${dir} cannot be created: ${existing} is not writable by this user`;
  }
  return null;
}

/**
 * "directory", "file" (anything else that exists), "missing" (also when it cannot be looked at), or "unknown"
 * when Deno's permissions do not let the gateway look at it ({@linkcode mayLookAt}: looking would prompt).
 */
export async function kindOf(path: string): Promise<"directory" | "file" | "missing" | "unknown"> {
  if (!mayLookAt(path)) return "unknown";
  try {
    return (await stat(path)).isDirectory() ? "directory" : "file";
  } catch {
    // ENOTDIR too: a file on the way, which the walk up finds.
    return "missing";
  }
}

/**
 * Whether `a` and `b` name one file: the same place once each is followed as the gateway's writes reach it
 * ({@linkcode placeOf}: links, and `..` where the runtime hands it on; a file still to be made too), or, where
 * both exist, one file under two names (a hard link). Two names that differ only in case on a file system that
 * ignores case (macOS, Windows) are one file only once both exist.
 */
export async function sameFile(a: string, b: string): Promise<boolean> {
  if (await placeOf(a) === await placeOf(b)) return true;
  if (!mayLookAt(a) || !mayLookAt(b)) return false;
  try {
    const [one, other] = await Promise.all([stat(a), stat(b)]);
    return one.dev === other.dev && one.ino === other.ino;
  } catch {
    return false;
  }
}

/**
 * True only when the system says the access is denied; false when it allows it or cannot say (on Deno without
 * `--allow-sys=uid,gid`, where asking would prompt: {@linkcode mayAskAccess}). The synchronous call, because
 * Deno's promise form throws its permission error past the promise.
 */
function denied(path: string, mode: number): boolean {
  if (!mayAskAccess()) return false;
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
