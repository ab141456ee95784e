/**
 * Why a file the config names could not be read (the config file itself, the price catalog of
 * `pricing.catalog`), as ` (reason)` to follow `cannot read …`, or nothing when unknown.
 *
 * Deno's own refusal of a path its permissions leave out (`NotCapable`; `PermissionDenied` when denied at a
 * prompt) has no `code`, and is the usual one: `deno task start` may read `config/`, `data/` and `lib/` only, while
 * `check` is often run with `-A` and reads anywhere. Without this the start said `cannot read price catalog` and
 * nothing more for a catalog that `check` had read.
 *
 * @module
 */

/** ` (reason)` for `err`; `what` names the file in the fix (`the file`, `the catalog`). */
export function readFailure(err: unknown, what: string): string {
  const name = err instanceof Error ? err.name : "";
  if (name === "NotCapable" || name === "PermissionDenied") {
    return " (Deno's permissions do not let it read this path: `deno task start` reads only config/ and data/; " +
      `put ${what} in config/, or run deno with --allow-read for it)`;
  }
  const code = typeof err === "object" && err !== null && "code" in err ? String(err.code) : "";
  const reason = code === "ENOENT"
    ? "file not found"
    : code === "EACCES"
    ? "permission denied"
    : code === "EISDIR"
    ? "is a directory"
    : code !== ""
    ? code
    : err instanceof Error
    ? err.message
    : "";
  return reason ? ` (${reason})` : "";
}
