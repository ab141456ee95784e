/**
 * The web-search cost column's migration (SQLite schema 15 → 16, PostgreSQL 14 → 15) on a database as the
 * earlier gateway left it: its records gain `cost_web_search` at 0 (no search was priced then) and keep
 * everything else; a new record's search cost is stored, summed, and part of its `cost`. The older database is
 * made by the migrations up to the version before, as the earlier gateway made it. The PostgreSQL case runs in CI always; off CI it skips only when the
 * database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { createSqliteStore, SQLITE_MIGRATIONS, USAGE_SCHEMA_VERSION } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { POSTGRES_MIGRATIONS } from "./postgres_schema.ts";
import { USAGE_COLUMNS } from "./record.ts";
import type { UsageDatabase } from "./store.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";

/** The record the earlier gateway wrote (no search cost), and one written after the migration (two searches). */
const OLD = { ...makeRecord(1, { time: "2025-01-02T00:00:00.000Z", cost: 0.5 }), uid: "u_old" };
const SEARCHED = {
  ...makeRecord(2, { time: "2025-01-03T00:00:00.000Z", cost: 0.52, cost_input: 0.5, cost_web_search: 0.02 }),
  uid: "u_new",
};

/** The earlier gateway's INSERT of {@linkcode OLD}: every column but the new one, `$1…` or `?` placeholders. */
function oldInsert(placeholder: (i: number) => string): { sql: string; values: (string | number | null)[] } {
  const columns = USAGE_COLUMNS.filter(([name]) => name !== "cost_web_search");
  const values = columns.map(([name, kind]) => {
    const value = (OLD as Record<string, unknown>)[name];
    if (kind === "bool") return value ? 1 : 0;
    if (kind === "json?") return value === null || value === undefined ? null : JSON.stringify(value);
    return (value ?? null) as string | number | null;
  });
  return {
    sql: `INSERT INTO usage (uid, ${columns.map(([name]) => name).join(", ")}) VALUES (${
      [OLD.uid, ...values].map((_, i) => placeholder(i + 1)).join(", ")
    })`,
    values: [OLD.uid, ...values],
  };
}

async function assertMigrated(db: UsageDatabase): Promise<void> {
  const [old] = (await db.listRecords({})).data;
  assert.equal(old.request_id, "req_1");
  assert.equal(old.cost_web_search, 0, "an older record priced no search");
  assert.equal(old.cost, 0.5, "and keeps its cost");
  await db.insert([SEARCHED]);
  const { uid: _uid, ...fresh } = SEARCHED;
  assert.deepEqual((await db.listRecords({ limit: 1 })).data, [fresh]);
  const totals = (await db.query({})).totals;
  assert.equal(totals.cost_web_search, 0.02);
  assert.equal(Number(totals.cost.toFixed(9)), 1.02);
}

Deno.test("web search column migration: SQLite schema 15 → 16 adds it at 0, keeping the records", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "search-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = new DatabaseSync(path);
    old.exec("CREATE TABLE usage_schema (version INTEGER NOT NULL)");
    for (const [version, sql] of SQLITE_MIGRATIONS.filter(([v]) => v <= 15)) {
      old.exec(sql);
      old.prepare("INSERT INTO usage_schema (version) VALUES (?)").run(version);
    }
    const insert = oldInsert(() => "?");
    old.prepare(insert.sql).run(...insert.values);
    old.close();

    const db = await open(path);
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
    const column = file.prepare("PRAGMA table_info(usage)").all().find((c) => c.name === "cost_web_search");
    assert.deepEqual([column?.type, column?.notnull, column?.dflt_value], ["REAL", 1, "0"]);
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("web search column migration: PostgreSQL schema 14 → 15 adds it at 0, keeping the records", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("searchmig");
  try {
    await queryOnce(`CREATE SCHEMA "${schema}"`);
    const sql = postgres(TEST_DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      await sql.unsafe(
        "CREATE TABLE schema_versions (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
      );
      for (const [version, statements] of POSTGRES_MIGRATIONS.filter(([v]) => v <= 14)) {
        for (const statement of statements) await sql.unsafe(statement);
        await sql.unsafe("INSERT INTO schema_versions (version) VALUES ($1)", [version]);
      }
      const insert = oldInsert((i) => `$${i}`);
      // PostgreSQL's booleans are booleans, not SQLite's 0 and 1.
      const values = insert.values.map((v, i) =>
        USAGE_COLUMNS.filter(([name]) => name !== "cost_web_search")[i - 1]?.[1] === "bool" ? v === 1 : v
      );
      await sql.unsafe(insert.sql, values);
    } finally {
      await sql.end({ timeout: 5 });
    }
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const [ran] = await queryOnce(`SELECT 1 AS ran FROM "${schema}".schema_versions WHERE version = 15`);
    assert.ok(ran, "migration 15 ran");
    const [column] = await queryOnce(
      `SELECT data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'usage' AND column_name = 'cost_web_search'`,
      [schema],
    );
    assert.deepEqual([column?.data_type, column?.is_nullable, column?.column_default], [
      "double precision",
      "NO",
      "0",
    ]);
  } finally {
    await dropSchema(schema);
  }
});
