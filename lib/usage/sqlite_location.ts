/**
 * Whether the SQLite usage database can be opened where `usage.sqlite` says, found without writing anything
 * (`file_location.ts`): what `check` asks, so it refuses the config `serve` would not start with. SQLite in WAL
 * mode writes `-wal` and `-shm` files beside the database, so its directory must be writable too. A SQLite URI
 * (`file:…`) is checked at the file it opens (`sqlite_file_name.ts`), and refused when SQLite would not open it
 * or would open it read-only.
 *
 * @module
 */
import { fileLocationProblem, kindOf } from "./file_location.ts";
import { sqliteFileOf } from "./sqlite_file_name.ts";

/** Why the usage database cannot be at `name` (a sentence for `usage.sqlite: …`), or null when it can. */
export async function sqliteLocationProblem(name: string): Promise<string | null> {
  const file = sqliteFileOf(name);
  if (file.kind === "memory") return null;
  if (file.kind === "refused") return file.problem;
  if (file.mustExist && await kindOf(file.path) === "missing") {
    return `${file.path} does not exist, and ${name} (mode=rw) opens an existing database only`;
  }
  return fileLocationProblem(file.path, {
    file: "a database file",
    name: "the usage database",
    dirNote: " (the database and its -wal and -shm files go there)",
  });
}
