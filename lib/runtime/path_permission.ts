/**
 * What the runtime's own permissions leave out for a file the gateway will write. Deno runs with an allow-list
 * (`deno task start` reads config/, data/ and lib/, and writes data/ only); a usage file elsewhere is refused on
 * first use, which the system's access check cannot see (it answers from the mode bits), so `check` passed and
 * `serve` listened while every record meant for the file was lost. Bun and the single binary have no such list.
 *
 * @module
 */

/**
 * What Deno's permissions do not grant for `path` (relative to the working directory): `"read and write"`,
 * `"read"` or `"write"`; null when both are granted, or on another runtime.
 */
export function accessLeftOut(path: string): string | null {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (deno === undefined) return null;
  // Asked, never requested: a prompt (an operator's terminal without the flag) counts as not granted.
  const missing = (["read", "write"] as const).filter((name) =>
    deno.permissions.querySync({ name, path }).state !== "granted"
  );
  return missing.length === 0 ? null : missing.join(" and ");
}

/**
 * Whether the gateway may look at `path` without asking: always on another runtime; on Deno, when read access to
 * it is granted. Deno asks the operator's terminal for each path a call touches outside `--allow-read` (a
 * prompt that stopped `deno task start` on a fresh checkout, whose location checks looked at the directory
 * above `data/`), so a check that only wants to know answers "cannot tell" for such a path instead.
 */
export function mayLookAt(path: string): boolean {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  return deno === undefined || deno.permissions.querySync({ name: "read", path }).state === "granted";
}

/**
 * Whether the system may be asked if this user can write a path (Node's `access`) without a prompt: always on
 * another runtime; on Deno, when `--allow-sys` grants `uid` and `gid`, which its `access` reads (`deno task
 * start` grants both). Without them Deno asked the operator's terminal on every start once `data/` existed;
 * off a terminal it refused, and the check said nothing.
 */
export function mayAskAccess(): boolean {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  return deno === undefined ||
    (["uid", "gid"] as const).every((kind) =>
      deno.permissions.querySync({ name: "sys", kind }).state === "granted"
    );
}

/** Every kind of permission Deno has: all of them granted whole (`-A`) is what lets paths through as written. */
const DENO_PERMISSIONS = ["read", "write", "net", "env", "sys", "run", "ffi", "import"] as const;

/**
 * Whether the runtime hands a path to the system as written: always on Bun; on Deno (2.9) only with every
 * permission granted whole (`-A` alone). A `--deny-*` or `--ignore-*` flag beside `-A` leaves its kind
 * "granted" but `partial` (granted except what the flag names), and Deno then checks paths as under narrower
 * grants: read as "granted" alone, `-A --deny-net=…` was taken for `-A`, so the same-file check followed
 * `link/..` the way Deno no longer hands it on, and a SQLite URI was not refused though Deno made a file named
 * after the whole URI. Under any narrower grant (`deno task start`, the compiled binary) Deno checks each
 * path against its permissions and hands the system the path it checked instead: made absolute from the working
 * directory, `.` and `..` dropped as text. So there `data/link/../u.jsonl` is `data/u.jsonl` whatever `link`
 * leads to (the system would take the directory above the link's target), for every file opened and directory
 * made; and `node:sqlite` is handed a name starting `file:` as such a path too, so SQLite never reads it as a
 * URI (`file:data/u.sqlite` is the file `u.sqlite` in a directory named `file:data`). Asked, never requested.
 */
export function pathsAsWritten(): boolean {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  return deno === undefined ||
    DENO_PERMISSIONS.every((name) => {
      const status = deno.permissions.querySync({ name });
      return status.state === "granted" && !status.partial;
    });
}
