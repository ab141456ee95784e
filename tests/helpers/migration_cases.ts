/**
 * One migration test's steps, kept once: build the database as the earlier gateway left it (old_databases.ts),
 * write its old rows, open it as the gateway does at start-up (which migrates it), let the test check what its
 * stores read and write, then look at the file itself: it is at the latest schema version, every migration
 * recorded, with the columns the test names. SQLite is opened by both of the gateway's SQLite stores (in this
 * thread and in its worker thread), each on a fresh copy; PostgreSQL in a schema of its own, dropped after, and
 * skipped off CI only when the database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSqliteStore, SQLITE_MIGRATIONS, USAGE_SCHEMA_VERSION } from "../../lib/usage/sqlite_store.ts";
import { openSqliteWorkerStore } from "../../lib/usage/sqlite_worker_store.ts";
import { openPostgresStore } from "../../lib/usage/postgres_store.ts";
import { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from "../../lib/usage/postgres_schema.ts";
import type { UsageDatabase } from "../../lib/usage/store.ts";
import { postgresAt, sqliteAt } from "./old_databases.ts";
import { dropSchema, postgresOrSkip, queryOnce, randomSchema, TEST_DATABASE_URL } from "./postgres.ts";

/** The gateway's two SQLite stores: the one on the request thread and the one in a worker thread. */
export const SQLITE_OPENERS: readonly ((path: string) => Promise<UsageDatabase>)[] = [
  (path) => Promise.resolve(createSqliteStore(path)),
  openSqliteWorkerStore,
];

/** A migration test on SQLite. */
export interface SqliteMigrationCase {
  /** The schema version the earlier gateway left. */
  from: number;
  /** The old rows, as that gateway wrote them. */
  rows: readonly string[];
  /** What the stores read and write once migrated. */
  check(db: UsageDatabase): Promise<void>;
  /** The migrated file's own state (columns, indexes). */
  inspect?(file: DatabaseSync): void;
  /** Only these stores (default: both). */
  openers?: readonly ((path: string) => Promise<UsageDatabase>)[];
}

/** Runs `test` once per SQLite store, each on a database made afresh at `test.from`. */
export async function migrateSqlite(test: SqliteMigrationCase): Promise<void> {
  for (const open of test.openers ?? SQLITE_OPENERS) {
    const dir = await Deno.makeTempDir({ prefix: "migration-" });
    try {
      const path = `${dir}/usage.sqlite`;
      const old = sqliteAt(path, test.from);
      for (const statement of test.rows) old.exec(statement);
      old.close();
      const db = await open(path);
      try {
        await test.check(db);
      } finally {
        await db.close();
      }
      const file = new DatabaseSync(path);
      try {
        assert.equal(
          USAGE_SCHEMA_VERSION,
          SQLITE_MIGRATIONS.at(-1)![0],
          "the latest version is the last migration's",
        );
        assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
        test.inspect?.(file);
      } finally {
        file.close();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
}

/** A column of a migrated SQLite file as `PRAGMA table_info` has it: type, NOT NULL (1/0), default. */
export function sqliteColumn(file: DatabaseSync, table: string, name: string): unknown[] {
  const column = file.prepare(`PRAGMA table_info(${table})`).all().find((c) => c.name === name);
  return [column?.type, column?.notnull, column?.dflt_value];
}

/** A migration test on PostgreSQL. */
export interface PostgresMigrationCase {
  /** The schema version the earlier gateway left. */
  from: number;
  /** The old rows, as that gateway wrote them. */
  rows: readonly string[];
  /** What the store reads and writes once migrated. */
  check(db: UsageDatabase): Promise<void>;
  /** The migrated schema's own state (columns, indexes), by its name. */
  inspect?(schema: string): Promise<void>;
}

/** Runs `test` in a schema of its own made at `test.from`; skipped only off CI with no database to reach. */
export async function migratePostgres(t: Deno.TestContext, test: PostgresMigrationCase): Promise<void> {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("migration");
  try {
    await postgresAt(schema, test.from, test.rows);
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await test.check(db);
    } finally {
      await db.close();
    }
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.equal(
      POSTGRES_SCHEMA_VERSION,
      POSTGRES_MIGRATIONS.at(-1)![0],
      "the latest version is the last migration's",
    );
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
      "every migration ran once, in order",
    );
    await test.inspect?.(schema);
  } finally {
    await dropSchema(schema);
  }
}

/**
 * The columns `names` (each `table.column`) of the migrated `schema` that exist, as
 * `[table, column, data_type, is_nullable, default]`, by table and column.
 */
export async function postgresColumns(schema: string, names: readonly string[]): Promise<unknown[][]> {
  const places = names.map((_, i) => `$${i + 2}`).join(", ");
  const rows = await queryOnce(
    `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns
     WHERE table_schema = $1 AND table_name || '.' || column_name IN (${places}) ORDER BY table_name, column_name`,
    [schema, ...names],
  );
  return rows.map((c) => [c.table_name, c.column_name, c.data_type, c.is_nullable, c.column_default]);
}
