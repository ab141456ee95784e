/**
 * A path as the gateway's own writes reach it: the path the runtime hands the system ({@linkcode pathsAsWritten}),
 * which the system then follows, each existing directory's link first, then the next name. Where the runtime hands
 * paths on as written (Bun, Deno with every permission), `link/..` is the directory above the link's target;
 * where Deno hands on the path it checked (`deno task start`), `..` was dropped as text before the system saw it.
 *
 * The check that each usage file is a file of its own compared `node:path`'s `resolve` (which drops `link/..` as
 * text) on both: on Bun and under `-A` a JSONL copy written into the spill file through `link/../` passed it, and
 * two different files were refused as one (`file_location.ts`).
 *
 * What Deno's permissions do not let the gateway look at ({@linkcode mayLookAt}) is taken as written, never
 * looked at: looking would ask the operator's terminal.
 *
 * @module
 */
import { realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, parse, resolve, sep } from "node:path";
import process from "node:process";
import { mayLookAt, pathsAsWritten } from "../runtime/path_permission.ts";

/** The root of `path` (empty when relative) and its names, without the empty ones and `.`; `..` kept. */
function namesOf(path: string): { root: string; names: string[] } {
  const root = isAbsolute(path) ? parse(path).root : "";
  const names = path.slice(root.length).split(sep === "/" ? "/" : /[\\/]/);
  return { root, names: names.filter((name) => name !== "" && name !== ".") };
}

/**
 * `path` absolute (from the working directory), as the runtime hands it to the system: `.` and doubled
 * separators dropped and `..` kept where it passes paths on as written, else `..` dropped as text too (Deno under
 * narrower permissions). Its `dirname`s are the directories the system passes on the way, as `makeDirectories`
 * (which takes `dirname` of the path given) makes them.
 */
export function handedPath(path: string): string {
  if (!pathsAsWritten()) return resolve(path);
  const { root, names } = namesOf(path);
  const base = root === "" ? process.cwd() : root;
  if (names.length === 0) return base;
  return `${base.endsWith(sep) ? base : `${base}${sep}`}${names.join(sep)}`;
}

/**
 * Where a file the gateway opens at `path` is, absolute and without links or `..` as far as it exists: each name
 * of {@linkcode handedPath} in turn, an existing one through its links (`realpath` of a path without `..`, which
 * every runtime follows alike), `..` the directory above the one reached. Names that do not exist are taken as
 * written: serve makes those directories, none of them a link, so `..` among them is the name before. Once `..`
 * has undone every name still to be made, the walk is back in directories that exist, whose links the system
 * follows again (`tmp/../data/u.jsonl` with `tmp` missing and `data` a link is in the link's target: taking the
 * rest as written let a JSONL copy and a spill file through `data` and `tmp/../data` pass as two files).
 */
export async function placeOf(path: string): Promise<string> {
  const { root, names } = namesOf(handedPath(path));
  // `reached` is where the system is after each name that exists. `asked` is what it is looked up by: the path
  // as written while it has no `..` (what Deno's permissions are granted for), else from where `..` led.
  // `toMake`: the names after `reached` that do not exist yet.
  let reached = root;
  let asked = reached;
  const toMake: string[] = [];
  for (const name of names) {
    if (toMake.length > 0) {
      if (name !== "..") {
        toMake.push(name);
        continue;
      }
      toMake.pop();
      // Back in directories that exist: the next name is looked up from there, through its links.
      if (toMake.length === 0) asked = reached;
      continue;
    }
    if (name === "..") {
      reached = dirname(reached);
      asked = reached;
      continue;
    }
    asked = join(asked, name);
    if (!mayLookAt(asked)) {
      reached = join(reached, name);
      continue;
    }
    try {
      reached = await realpath(asked);
    } catch {
      // Not there (or a file on the way, which the location check names): to be made.
      toMake.push(name);
    }
  }
  return join(reached, ...toMake);
}
