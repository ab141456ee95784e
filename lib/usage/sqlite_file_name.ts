/**
 * The file a `usage.sqlite` name opens. The store opens it with `node:sqlite`, which turns SQLite's URI filenames
 * on where the name reaches SQLite as written (Bun; Deno with every permission granted whole: `pathsAsWritten`,
 * which `usage_locations.ts` refuses such a name without): a name starting `file:` is a URI,
 * `file:data/usage.sqlite?mode=rwc` the file `data/usage.sqlite` and `file:///var/lib/gw/usage.db` an absolute
 * one, its path percent-decoded and ending at `?` or `#`, its query a list of `key=value`. `:memory:`,
 * `file::memory:`, `mode=memory`, `vfs=memdb` and an empty path (a temporary database, deleted when closed) write
 * no file the config names.
 *
 * The location checks (`sqlite_location.ts`), the check that each usage file is a file of its own
 * (`usage_locations.ts`) and the store making the database's directory (`sqlite_store.ts`) all take the file
 * from here: these names were left out of all three, so a `file:` database could share the JSONL copy's file, and
 * serve failed on a directory the check said it would make.
 *
 * The rules are SQLite's (`sqlite3ParseUri`, https://sqlite.org/uri.html) as built into Deno and Bun, without
 * `SQLITE_ALLOW_URI_AUTHORITY`: an authority other than none or `localhost` is refused. Of the query, SQLite
 * applies each `mode` in turn, from the flags `node:sqlite` opens with (read, write and create): an unknown one
 * fails the open at once, and so does one that allows more than the mode before it (`mode=ro&mode=rwc`: "access
 * mode not allowed"; only after `mode=memory` may any mode follow); each `cache` must be `shared` or `private`;
 * the last `vfs` names the VFS, which must exist; the first `immutable` that says yes opens the file read-only.
 * Reading the last mode alone let check and a reload accept names the next start failed to open. A name is
 * refused where SQLite would not open it, would open it read-only, or where the gateway cannot vouch for what it
 * does: any other option (SQLite's VFS reads some, such as `nolock`, `modeof` and `readonly_shm`, of which a few
 * fail the open), a VFS other than the default and `memdb`, an `immutable` value that is neither plainly yes nor
 * no (Deno's and Bun's SQLite read `immutable=256` differently), a path that is not UTF-8 once decoded.
 *
 * @module
 */
import process from "node:process";

/** What a `usage.sqlite` name opens. */
export type SqliteFile =
  /** Nothing the config names is written: an in-memory database, or a temporary one. */
  | { readonly kind: "memory" }
  /**
   * The database file at `path` (as the system takes a path: relative to the working directory). `mustExist`:
   * `mode=rw`, which opens an existing database only.
   */
  | { readonly kind: "file"; readonly path: string; readonly mustExist: boolean }
  /** A name SQLite refuses to open, or opens so that no record can be written: why, as a sentence. */
  | { readonly kind: "refused"; readonly problem: string };

/** Whether `name` is a SQLite URI filename (read as one only where `node:sqlite` has URIs on). */
export function isSqliteUri(name: string): boolean {
  return name.startsWith("file:");
}

/** SQLite's open flags a URI's `mode` sets (`SQLITE_OPEN_READONLY`, `_READWRITE`, `_CREATE`, `_MEMORY`). */
const READ_ONLY = 0x1, READ_WRITE = 0x2, CREATE = 0x4, MEMORY = 0x80;
const MODE_FLAGS = READ_ONLY | READ_WRITE | CREATE | MEMORY;
/** Each `mode` value and the flags it sets; option names and values are case-sensitive. */
const ACCESS_MODES = new Map([
  ["ro", READ_ONLY],
  ["rw", READ_WRITE],
  ["rwc", READ_WRITE | CREATE],
  ["memory", MEMORY],
]);
/** The flags `node:sqlite` opens a database with (`readOnly` not given), before the URI's modes. */
const OPEN_FLAGS = READ_WRITE | CREATE;
/** The VFS SQLite opens with when the URI names none (the first it registers on this system). */
const DEFAULT_VFS = process.platform === "win32" ? "win32" : "unix";
/** The values of `immutable` read alike by every SQLite (`sqlite3GetBoolean`; words ignore case). */
const NO = new Set(["0", "no", "off", "false"]);
const YES = new Set(["1", "yes", "on", "true"]);

/** What the `usage.sqlite` name `name` opens. */
export function sqliteFileOf(name: string): SqliteFile {
  if (name === ":memory:" || name === "") return { kind: "memory" };
  if (!isSqliteUri(name)) return { kind: "file", path: name, mustExist: false };
  const refused = (problem: string): SqliteFile => ({ kind: "refused", problem });
  let at = "file:".length;
  if (name.startsWith("//", at)) {
    const slash = name.indexOf("/", at + 2);
    const authority = name.slice(at + 2, slash < 0 ? name.length : slash);
    if (authority !== "" && authority !== "localhost") {
      return refused(
        `${name} names the host ${authority}: SQLite opens a file: URI with no host or localhost only ` +
          "(file:///absolute/path or file:relative/path)",
      );
    }
    at = slash < 0 ? name.length : slash;
  }
  const rest = parseRest(name.slice(at));
  if (rest === null) return refused(`${name} is not UTF-8 once its %HH are decoded`);
  const { path, options } = rest;
  let flags = OPEN_FLAGS;
  let mode: string | undefined;
  let vfs = DEFAULT_VFS;
  let immutable: string | undefined;
  for (const [key, value] of options) {
    if (key === "vfs") {
      vfs = value;
    } else if (key === "cache") {
      if (value !== "shared" && value !== "private") {
        return refused(`${name}: cache=${value} is no cache mode SQLite has (shared or private)`);
      }
    } else if (key === "mode") {
      const set = ACCESS_MODES.get(value);
      if (set === undefined) {
        return refused(`${name}: mode=${value} is no access mode SQLite has (ro, rw, rwc or memory)`);
      }
      // SQLite's rule: no mode may allow more than the flags so far (memory, which is no file, counts as none).
      if ((set & ~MEMORY) > (flags & MODE_FLAGS)) {
        return refused(
          `${name}: SQLite refuses mode=${value} after mode=${mode}: a later mode may not allow more than ` +
            "the one before it",
        );
      }
      flags = (flags & ~MODE_FLAGS) | set;
      mode = value;
    } else if (key === "immutable") {
      immutable ??= value;
    } else {
      return refused(
        `${name}: the gateway does not know what SQLite does with the option ${key} (it reads mode, cache, ` +
          "vfs and immutable): leave it out",
      );
    }
  }
  if (vfs !== DEFAULT_VFS && vfs !== "memdb") {
    return refused(
      `${name}: vfs=${vfs} is not a VFS the gateway opens its database with (${DEFAULT_VFS}, the default, or ` +
        "memdb): SQLite may have no such VFS, or one that locks or names files otherwise",
    );
  }
  if ((flags & READ_ONLY) !== 0) {
    return refused(`${name} opens the database read-only (mode=ro): the gateway writes its records there`);
  }
  // In memory without a VFS of its own: SQLite opens no file, so reads no `immutable`.
  if (path === "" || path === ":memory:" || (flags & MEMORY) !== 0) return { kind: "memory" };
  if (immutable !== undefined && !NO.has(immutable.toLowerCase())) {
    return refused(
      YES.has(immutable.toLowerCase())
        ? `${name} opens the database read-only (immutable=${immutable}): the gateway writes its records there`
        : `${name}: the gateway cannot tell whether SQLite reads immutable=${immutable} as yes (read-only) or ` +
          "no: give immutable=0, or leave it out",
    );
  }
  if (vfs === "memdb") return { kind: "memory" };
  return { kind: "file", path, mustExist: (flags & CREATE) === 0 };
}

/**
 * The path and the query options (in order, repeats kept) of what follows a URI's authority, as
 * `sqlite3ParseUri` reads them: everything ends at `#`, the path at `?`, an option at `&` and its name at `=`;
 * `%HH` is decoded in each, and `%00` ends the part it is in; an option with an empty name is skipped. Null when
 * a part is not UTF-8 once decoded (SQLite would take the bytes as they are).
 */
function parseRest(rest: string): { path: string; options: [string, string][] } | null {
  const hash = rest.indexOf("#");
  const text = hash < 0 ? rest : rest.slice(0, hash);
  const question = text.indexOf("?");
  const path = decode(question < 0 ? text : text.slice(0, question));
  if (path === null) return null;
  const options: [string, string][] = [];
  if (question >= 0) {
    for (const option of text.slice(question + 1).split("&")) {
      const equals = option.indexOf("=");
      const key = decode(equals < 0 ? option : option.slice(0, equals));
      const value = decode(equals < 0 ? "" : option.slice(equals + 1));
      if (key === null || value === null) return null;
      if (key !== "") options.push([key, value]);
    }
  }
  return { path, options };
}

/**
 * `%HH` decoded to its byte, the bytes read as UTF-8 (SQLite's filenames are); `%00` ends the text. Null when
 * the bytes are not UTF-8.
 */
function decode(text: string): string | null {
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === "%" && /^[0-9a-fA-F]{2}$/.test(hex)) {
      const byte = parseInt(hex, 16);
      if (byte === 0) break;
      bytes.push(byte);
      i += 2;
      continue;
    }
    const code = text.codePointAt(i) ?? 0;
    const char = String.fromCodePoint(code);
    bytes.push(...encoder.encode(char));
    i += char.length - 1;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
}
