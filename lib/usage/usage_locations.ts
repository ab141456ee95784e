/**
 * Where the usage pipeline will write, checked before it does: the SQLite database (`usage.sqlite`, unless
 * PostgreSQL holds the records), the JSONL copy (`usage.jsonl`) and the spill file (`usage.spill`, and the
 * `.replaying` name a replay gives it). `check` refuses what this finds, `serve` refuses it before it listens, and a
 * reload that changes `usage` or `postgres` (taken only at start) is refused for it, so a reload that says ok
 * means the next start works.
 *
 * Only the JSONL and spill paths used to go unchecked: `check` passed, `serve` started, and every record meant for
 * them was lost (`usage_spill_lost`, `usage_jsonl_lost`); a spill path naming a directory had that directory
 * renamed by the replay. Nor was it checked that the keys name different files: a JSONL copy in the spill file
 * was renamed and deleted by the next start's replay (the archive gone, and later records written to the deleted
 * file), and JSON lines appended to the database file broke the database. A path is followed as the system follows
 * it (`system_path.ts`: `link/..` is above the link's target), and a SQLite URI for `usage.sqlite` (`file:…`) is
 * taken at the file it opens (`sqlite_file_name.ts`); both used to be compared as text, or left out.
 *
 * @module
 */
import type { ConfigIssue, ResolvedConfig } from "../config/types.ts";
import { fileLocationProblem, kindOf, sameFile } from "./file_location.ts";
import { replayingPathOf } from "./spill.ts";
import { sqliteLocationProblem } from "./sqlite_location.ts";
import { isSqliteUri, sqliteFileOf } from "./sqlite_file_name.ts";
import { placeOf } from "./system_path.ts";
import { accessLeftOut, pathsAsWritten } from "../runtime/path_permission.ts";

/** Every usage file of `config` that cannot be where it says, as issues at its key. Writes nothing. */
export async function usageLocationIssues(config: ResolvedConfig): Promise<ConfigIssue[]> {
  const usage = config.usage;
  const issues: ConfigIssue[] = [];
  const sqlite = config.postgres === null ? usage.sqlite : "none";
  if (sqlite !== "none") {
    const problem = await sqliteLocationProblem(sqlite);
    if (problem !== null) issues.push({ path: "usage.sqlite", message: problem });
  }
  if (usage.jsonl !== undefined) {
    const problem = await fileLocationProblem(usage.jsonl, {
      file: "a JSONL file",
      name: "the JSONL copy of the usage records",
    });
    if (problem !== null) issues.push({ path: "usage.jsonl", message: problem });
  }
  // The pipeline runs (and may spill) with a database or a JSONL copy; with neither, nothing is written.
  if (sqlite !== "none" || config.postgres !== null || usage.jsonl !== undefined) {
    const problem = await spillLocationProblem(usage.spill);
    if (problem !== null) issues.push({ path: "usage.spill", message: problem });
  }
  issues.push(...await sharedFileIssues(writtenFiles(config, await sqliteNamesAfter(config))));
  return issues;
}

/**
 * The path SQLite names the database's `-wal` and `-shm` files after: the file it reaches through
 * `usage.sqlite` ({@linkcode placeOf}), links followed. SQLite takes the database's full name with every link
 * resolved (`unixFullPathname`), so a database that is a link to `real.sqlite` has `real.sqlite-wal`: built from
 * the link's name, a JSONL copy at the target's `-wal` passed as a file of its own. Undefined without a file.
 */
async function sqliteNamesAfter(config: ResolvedConfig): Promise<string | undefined> {
  const database = config.postgres === null && config.usage.sqlite !== "none"
    ? sqliteFileOf(config.usage.sqlite)
    : null;
  return database?.kind === "file" ? await placeOf(database.path) : undefined;
}

/** A file the usage pipeline writes: the path, and what it is when not the file its key names. */
interface WrittenFile {
  readonly path: string;
  /** `-wal file`, `replay name`: what it is of the key's file; absent for the key's own file. */
  readonly beside?: string;
}

/**
 * The files the usage pipeline of `config` writes, under the key that names each: the database with the `-wal`
 * and `-shm` files SQLite keeps beside it (named after `sqliteBase` when given, the file the database's path
 * reaches: {@linkcode sqliteNamesAfter}), the JSONL copy, the spill file and its replay name.
 */
function writtenFiles(config: ResolvedConfig, sqliteBase?: string): [string, WrittenFile[]][] {
  const usage = config.usage;
  const files: [string, WrittenFile[]][] = [];
  const sqlite = config.postgres === null ? usage.sqlite : "none";
  // A SQLite URI (`file:…`) by the file it opens; SQLite names the -wal and -shm files after that file.
  const database = sqlite === "none" ? null : sqliteFileOf(sqlite);
  if (database?.kind === "file") {
    const path = database.path;
    const base = sqliteBase ?? path;
    files.push(["usage.sqlite", [
      { path },
      { path: `${base}-wal`, beside: "-wal file" },
      { path: `${base}-shm`, beside: "-shm file" },
    ]]);
  }
  if (usage.jsonl !== undefined) files.push(["usage.jsonl", [{ path: usage.jsonl }]]);
  // The pipeline runs (and may spill) with a database or a JSONL copy; with neither, nothing is written.
  if (sqlite !== "none" || config.postgres !== null || usage.jsonl !== undefined) {
    files.push(["usage.spill", [
      { path: usage.spill },
      { path: replayingPathOf(usage.spill), beside: "replay name" },
    ]]);
  }
  return files;
}

/** `file` of `key` in a sentence: `usage.jsonl (/x/u.jsonl)`, `usage.sqlite's -wal file (/x/u.sqlite-wal)`. */
function named(key: string, file: WrittenFile): string {
  return `${key}${file.beside === undefined ? "" : `'s ${file.beside}`} (${file.path})`;
}

/** An issue at the later key for each file two keys would both write ({@linkcode sameFile}: links too). */
async function sharedFileIssues(files: readonly [string, WrittenFile[]][]): Promise<ConfigIssue[]> {
  const issues: ConfigIssue[] = [];
  for (let later = 1; later < files.length; later++) {
    const [key, own] = files[later];
    search: for (const [earlierKey, earlier] of files.slice(0, later)) {
      for (const file of own) {
        for (const other of earlier) {
          if (!await sameFile(file.path, other.path)) continue;
          issues.push({
            path: key,
            message:
              `${named(key, file)} and ${named(earlierKey, other)} are one file: each usage file must be a ` +
              "file of its own",
          });
          break search;
        }
      }
    }
  }
  return issues;
}

/** Why the spill file cannot be at `path`: as any file, and its replay's name must not be a directory either. */
async function spillLocationProblem(path: string): Promise<string | null> {
  const problem = await fileLocationProblem(path, { file: "a spill file", name: "the spill file" });
  if (problem !== null) return problem;
  const replaying = replayingPathOf(path);
  return await kindOf(replaying) === "directory"
    ? `${replaying} is a directory: a replay reads the spill file under that name`
    : null;
}

/**
 * The usage files of `config` that Deno's permissions leave out, as issues at their keys: each file and what is
 * written beside it (SQLite's `-wal` and `-shm`, the spill file's replay name). The system's access check cannot
 * see Deno's allow-list and Deno's refusal of `stat` looks like a missing path, so a file outside it passed every
 * other check and every record meant for it was lost. And a SQLite URI (`file:…`) for `usage.sqlite` where Deno
 * does not read it as one. None on Bun.
 */
export function usagePermissionIssues(config: ResolvedConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const sqlite = config.postgres === null ? config.usage.sqlite : "none";
  const uriUnread = isSqliteUri(sqlite) && !pathsAsWritten();
  if (uriUnread) issues.push(uriOnDenoIssue(sqlite));
  for (const [key, written] of writtenFiles(config)) {
    // The file such a URI names is not the one Deno would open: said once, above.
    if (key === "usage.sqlite" && uriUnread) continue;
    for (const { path } of written) {
      const leftOut = accessLeftOut(path);
      if (leftOut === null) continue;
      issues.push({
        path: key,
        message:
          `Deno's permissions do not let the gateway ${leftOut} ${path}: run deno with --allow-read and ` +
          "--allow-write for it (`deno task start` has them for data/ only)",
      });
      break;
    }
  }
  return issues;
}

/**
 * The issue of a SQLite URI (`file:…`) where Deno does not read it as one (`pathsAsWritten`: without every
 * permission granted whole): the database would be another file, named after the whole URI, or refused by the
 * permissions (`deno task start`: it is not under data/). Says the path to give instead, when there is one.
 */
function uriOnDenoIssue(name: string): ConfigIssue {
  const file = sqliteFileOf(name);
  const instead = file.kind === "file" ? ` (${file.path})` : file.kind === "memory" ? " (:memory:)" : "";
  return {
    path: "usage.sqlite",
    message: "Deno reads a SQLite URI (file:…) only with every permission granted (-A, and no --deny-* or " +
      `--ignore-* flag); under these permissions it takes ${name} as a file name in the working directory: ` +
      `give usage.sqlite as a path${instead}`,
  };
}
