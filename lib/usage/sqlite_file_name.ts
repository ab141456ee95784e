/**
 * The file a `usage.sqlite` name opens. The store opens it with `node:sqlite`, which turns SQLite's URI filenames
 * on where the name reaches SQLite as written (Bun; Deno with every permission granted: `pathsAsWritten`, which
 * `usage_locations.ts` refuses such a name without): a name starting `file:` is a URI,
 * `file:data/usage.sqlite?mode=rwc` the file `data/usage.sqlite` and `file:///var/lib/gw/usage.db` an absolute
 * one, its path percent-decoded and ending at `?` or `#`, its query a list of `key=value` of which SQLite itself
 * reads `mode` and `vfs` (the last of each counts). `:memory:`, `file::memory:`, `mode=memory`, `vfs=memdb` and
 * an empty path (a temporary database, deleted when closed) write no file the config names.
 *
 * The location checks (`sqlite_location.ts`), the check that each usage file is a file of its own
 * (`usage_locations.ts`) and the store making the database's directory (`sqlite_store.ts`) all take the file
 * from here: these names were left out of all three, so a `file:` database could share the JSONL copy's file, and
 * serve failed on a directory the check said it would make.
 *
 * The rules are SQLite's (`sqlite3ParseUri`, https://sqlite.org/uri.html) as built into Deno and Bun, without
 * `SQLITE_ALLOW_URI_AUTHORITY`: an authority other than none or `localhost` is refused.
 *
 * @module
 */

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

/** What the `usage.sqlite` name `name` opens. */
export function sqliteFileOf(name: string): SqliteFile {
  if (name === ":memory:" || name === "") return { kind: "memory" };
  if (!isSqliteUri(name)) return { kind: "file", path: name, mustExist: false };
  let at = "file:".length;
  if (name.startsWith("//", at)) {
    const slash = name.indexOf("/", at + 2);
    const authority = name.slice(at + 2, slash < 0 ? name.length : slash);
    if (authority !== "" && authority !== "localhost") {
      return {
        kind: "refused",
        problem:
          `${name} names the host ${authority}: SQLite opens a file: URI with no host or localhost only ` +
          "(file:///absolute/path or file:relative/path)",
      };
    }
    at = slash < 0 ? name.length : slash;
  }
  const { path, options } = parseRest(name.slice(at));
  const mode = options.get("mode");
  if (path === "" || path === ":memory:" || mode === "memory" || options.get("vfs") === "memdb") {
    return { kind: "memory" };
  }
  if (mode === "ro") {
    return {
      kind: "refused",
      problem: `${name} opens the database read-only (mode=ro): the gateway writes its records there`,
    };
  }
  if (mode !== undefined && mode !== "rw" && mode !== "rwc") {
    return { kind: "refused", problem: `${name}: SQLite has no access mode ${mode} (ro, rw, rwc or memory)` };
  }
  return { kind: "file", path, mustExist: mode === "rw" };
}

/**
 * The path and the query options of what follows a URI's authority, as `sqlite3ParseUri` reads them: everything
 * ends at `#`, the path at `?`, an option at `&` and its name at `=`; `%HH` is decoded in each, and `%00` ends the
 * part it is in; an option with an empty name is skipped; of an option given twice, the last counts.
 */
function parseRest(rest: string): { path: string; options: Map<string, string> } {
  const hash = rest.indexOf("#");
  const text = hash < 0 ? rest : rest.slice(0, hash);
  const question = text.indexOf("?");
  const path = decode(question < 0 ? text : text.slice(0, question));
  const options = new Map<string, string>();
  if (question >= 0) {
    for (const option of text.slice(question + 1).split("&")) {
      const equals = option.indexOf("=");
      const key = decode(equals < 0 ? option : option.slice(0, equals));
      if (key === "") continue;
      options.set(key, equals < 0 ? "" : decode(option.slice(equals + 1)));
    }
  }
  return { path, options };
}

/** `%HH` decoded to its byte, the bytes read as UTF-8 (SQLite's filenames are); `%00` ends the text. */
function decode(text: string): string {
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
  return new TextDecoder().decode(new Uint8Array(bytes));
}
