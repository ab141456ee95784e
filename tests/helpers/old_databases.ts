/**
 * Databases as an earlier gateway left them, for migration tests: the frozen early schemas
 * (frozen_schemas.ts: SQLite schema 3, PostgreSQL schema 2) brought forward by the gateway's own migrations up
 * to a given version and no further. A migration test builds the database at version N − 1, writes its old rows,
 * and checks that the gateway's start-up migration to N keeps them.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { SQLITE_MIGRATIONS } from "../../lib/usage/sqlite_store.ts";
import { POSTGRES_MIGRATIONS } from "../../lib/usage/postgres_schema.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "./frozen_schemas.ts";
import { queryOnce, TEST_DATABASE_URL } from "./postgres.ts";

/** A SQLite usage database at `version`, opened; the caller adds its rows and closes it. */
export function sqliteAt(path: string, version: number): DatabaseSync {
  const db = new DatabaseSync(path);
  db.exec(SQLITE_SCHEMA_3);
  for (const [v, sql] of SQLITE_MIGRATIONS) if (v > 3 && v <= version) db.exec(sql);
  db.exec(`UPDATE usage_schema SET version = ${version}`);
  return db;
}

/**
 * PostgreSQL `schema` at `version`, then `statements` (the old rows) run in it, on a connection of its own.
 * The caller drops the schema.
 */
export async function postgresAt(
  schema: string,
  version: number,
  statements: readonly string[],
): Promise<void> {
  for (const statement of postgresSchema2(schema)) await queryOnce(statement);
  const sql = postgres(TEST_DATABASE_URL, {
    max: 1,
    onnotice: () => {},
    connection: { search_path: schema },
  });
  try {
    for (const [v, list] of POSTGRES_MIGRATIONS) {
      if (v <= 2 || v > version) continue;
      for (const statement of list) await sql.unsafe(statement);
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES ($1)", [v]);
    }
    for (const statement of statements) await sql.unsafe(statement);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
