/**
 * Watching a config file through the symbolic links that lead to it, for both runtime edges (each supplies how a
 * directory is watched). A Kubernetes ConfigMap or Secret volume is the case that shaped it: `gateway.yaml` is a
 * link to `..data/gateway.yaml`, `..data` a link to a timestamped directory, and an update renames a new
 * `..data` link over the old one. No event ever names `gateway.yaml`, and the file it resolves to lives in a
 * directory that a watch on the link's own directory never sees.
 *
 * So an event is only a reason to look: every directory the path passes through a link in, and the directory of
 * the file it resolves to, are watched; on any event in them the path is resolved again and the handler runs
 * only when what it resolves to (its real path and the file's identity, size and times) differs from what it
 * resolved to when the handler last ran. Unrelated files in those directories cost a few `lstat` calls and
 * never a reload, and the several events of one swap end in one reload.
 *
 * @module
 */
import { lstatSync, readlinkSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, parse, resolve } from "node:path";
import { mayLookAt } from "./path_permission.ts";

/**
 * Watches one directory, not recursively, and calls `onEvent` on any change of an entry in it; returns a
 * function that stops. Throws when the directory cannot be watched (it is gone, or unreadable).
 */
export type DirectoryWatch = (dir: string, onEvent: () => void) => () => void;

/** How long a burst of events is gathered before the path is looked at again (editors write in several steps). */
export const WATCH_DEBOUNCE_MS = 150;

/**
 * The longest a burst may put the look off: a file written constantly beside the config (a usage database in
 * the same directory) must not keep a change of the config from being seen.
 */
export const WATCH_MAX_WAIT_MS = 1_000;

/** Links followed at most while resolving, as Linux's own bound (MAXSYMLINKS); a longer chain is a loop. */
const MAX_LINKS = 40;

/** What a path resolves to now, and the directories to watch to hear when that changes. */
export interface Resolution {
  /** The real path and the identity, size and times of the file there; differs when anything of it does. */
  readonly fingerprint: string;
  /** At most {@linkcode MAX_LINKS} + 2 directories. */
  readonly dirs: readonly string[];
}

function components(path: string): string[] {
  return path.slice(parse(path).root.length).split(/[\\/]+/).filter((c) => c !== "" && c !== ".");
}

/** The deepest directory of `path` (itself or an ancestor) that exists: where its creation would show. */
function existingAncestor(path: string): string {
  let dir = path;
  while (
    mayLookAt(dir) && lstatSync(dir, { throwIfNoEntry: false })?.isDirectory() !== true &&
    dirname(dir) !== dir
  ) {
    dir = dirname(dir);
  }
  return dir;
}

/**
 * Resolves `path` one component at a time, as the kernel does, noting the directory of every link met on the
 * way (renaming a new link over it is how it changes) and the directory of the file reached (editing it in
 * place shows there). A missing file, a dangling link or a loop resolves to "missing", watched from the deepest
 * directory that exists.
 */
export function resolveLinks(path: string): Resolution {
  const absolute = resolve(path);
  const dirs = new Set([dirname(absolute)]);
  let current = parse(absolute).root;
  let pending = components(absolute);
  let links = 0;
  let missing = false;
  while (pending.length > 0) {
    const [name, ...rest] = pending;
    pending = rest;
    if (name === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, name);
    // A directory Deno's permissions keep the gateway from looking at (those above `config/` under `deno task
    // start`) is taken as it is written: looking would ask the operator's terminal, and the gateway could not
    // watch it anyway.
    if (!mayLookAt(next) && pending.length > 0) {
      current = next;
      continue;
    }
    let link: string | undefined;
    try {
      const entry = lstatSync(next, { throwIfNoEntry: false });
      if (entry === undefined) missing = true;
      else if (entry.isSymbolicLink()) link = readlinkSync(next);
    } catch {
      missing = true; // Unreadable, or a file where a directory was expected.
    }
    if (missing || (link !== undefined && ++links > MAX_LINKS)) {
      missing = true;
      current = join(next, ...pending);
      break;
    }
    if (link === undefined) {
      current = next;
      continue;
    }
    dirs.add(current);
    if (isAbsolute(link)) current = parse(link).root;
    pending = [...components(link), ...pending];
  }
  let fingerprint = `missing ${current}`;
  if (!missing) {
    try {
      const file = statSync(current);
      fingerprint = [current, file.dev, file.ino, file.size, file.mtimeMs, file.ctimeMs].join(" ");
    } catch {
      missing = true;
    }
  }
  dirs.add(missing ? existingAncestor(dirname(current)) : dirname(current));
  return { fingerprint, dirs: [...dirs] };
}

/** A directory's identity: a directory removed and made again is a new one, and its old watch hears nothing. */
function identity(dir: string): string | undefined {
  try {
    const entry = statSync(dir);
    return `${entry.dev} ${entry.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * Calls `handler` when what `path` resolves to changes: the file is edited or replaced, or any link on the way
 * to it is pointed elsewhere. Returns a function that stops watching. The watches follow the resolution: a
 * directory no longer on the way is let go, a new one (or one made again) is watched, so their number stays
 * bounded however often the links change.
 */
export function watchResolvedFile(path: string, handler: () => void, watchDir: DirectoryWatch): () => void {
  let last = resolveLinks(path);
  const watches = new Map<string, { identity: string; stop: () => void }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let burstStart: number | undefined;
  let stopped = false;

  /**
   * Watches `dirs` and lets go of the rest; `renew` makes every watch anew (after a change: a directory removed
   * and made again within one burst may have the same inode number, and its old watch hears nothing). Says
   * whether it made any watch.
   */
  const arm = (dirs: readonly string[], renew: boolean): boolean => {
    for (const [dir, watch] of watches) {
      if (!renew && dirs.includes(dir) && identity(dir) === watch.identity) continue;
      watch.stop();
      watches.delete(dir);
    }
    let made = false;
    for (const dir of dirs) {
      const id = identity(dir);
      if (watches.has(dir) || id === undefined) continue;
      try {
        watches.set(dir, { identity: id, stop: watchDir(dir, onEvent) });
        made = true;
      } catch {
        // Gone or unreadable since it was resolved: the next look tries again.
      }
    }
    return made;
  };

  const look = () => {
    timer = undefined;
    burstStart = undefined;
    if (stopped) return;
    let now = resolveLinks(path);
    // A new watch hears nothing of what changed before it was made: after making any, resolve once more.
    let renew = now.fingerprint !== last.fingerprint;
    for (let round = 0; round < 3 && arm(now.dirs, renew); round++) {
      renew = false;
      now = resolveLinks(path);
    }
    if (now.fingerprint === last.fingerprint) return;
    last = now;
    handler();
  };

  function onEvent() {
    if (stopped) return;
    const now = performance.now();
    burstStart ??= now;
    clearTimeout(timer);
    timer = setTimeout(look, Math.max(0, Math.min(WATCH_DEBOUNCE_MS, burstStart + WATCH_MAX_WAIT_MS - now)));
  }

  arm(last.dirs, false);
  return () => {
    stopped = true;
    clearTimeout(timer);
    for (const watch of watches.values()) watch.stop();
    watches.clear();
  };
}
