/**
 * Whether the SQLite usage database can be opened where `usage.sqlite` says, found without writing anything
 * (`file_location.ts`): what `check` asks, so it refuses the config `serve` would not start with. SQLite in WAL
 * mode writes `-wal` and `-shm` files beside the database, so its directory must be writable too.
 *
 * @module
 */
import { fileLocationProblem } from "./file_location.ts";

/** Why the usage database cannot be at `path` (a sentence for `usage.sqlite: …`), or null when it can. */
export function sqliteLocationProblem(path: string): Promise<string | null> {
  if (path === ":memory:" || path.startsWith("file:")) return Promise.resolve(null);
  return fileLocationProblem(path, {
    file: "a database file",
    name: "the usage database",
    dirNote: " (the database and its -wal and -shm files go there)",
  });
}
