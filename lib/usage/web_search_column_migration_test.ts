/**
 * The web-search cost column's migration (SQLite schema 15 → 16, PostgreSQL 14 → 15) on a database as the
 * earlier gateway left it: its records gain `cost_web_search` at 0 (no search was priced then) and keep
 * everything else; a new record's search cost is stored, summed, and part of its `cost`. The older database is
 * today's with the column taken away and its schema version set back, which is what the earlier gateway wrote
 * (the migration adds only the column). The PostgreSQL case runs in CI always; off CI it skips only when the
 * database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { createSqliteStore, USAGE_SCHEMA_VERSION } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { POSTGRES_SCHEMA_VERSION } from "./postgres_schema.ts";
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
    const current = createSqliteStore(path);
    await current.insert([OLD]);
    await current.close();
    const old = new DatabaseSync(path);
    old.exec(
      "ALTER TABLE usage DROP COLUMN cost_web_search; UPDATE usage_schema SET version = 15 WHERE version = 16",
    );
    old.close();

    const db = await open(path);
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(USAGE_SCHEMA_VERSION, 16);
    assert.equal(file.prepare("SELECT MAX(version) AS v FROM usage_schema").get()?.v, 16);
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
    const current = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    await current.insert([OLD]);
    await current.close();
    const sql = postgres(TEST_DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      await sql.unsafe("ALTER TABLE usage DROP COLUMN cost_web_search");
      await sql.unsafe("DELETE FROM schema_versions WHERE version = 15");
    } finally {
      await sql.end({ timeout: 5 });
    }
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    assert.equal(POSTGRES_SCHEMA_VERSION, 15);
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
