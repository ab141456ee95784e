/**
 * The cache columns' migration (SQLite schema 6 → 7, PostgreSQL 5 → 6) on databases as the earlier gateway
 * left them: their records gain `cache` (null: no cache then), `saved_tokens` and `saved_cost` (0: nothing
 * saved) and keep everything else, and the new records' cache outcomes are summed by `/admin/usage`. Then the
 * trace column's (SQLite 8 → 9, PostgreSQL 7 → 8): older records read back with `trace_id: null` (no trace
 * then), and a new record's trace finds it in the request log. Then the cost classes' (SQLite 9 → 10, PostgreSQL
 * 8 → 9): older records read back with 0 in each class (no split then) and sum to 0, a new record's split is
 * stored and summed, and the columns are NOT NULL with default 0. The old databases are the frozen schemas (tests/helpers/frozen_schemas.ts) brought forward by the migrations that
 * followed them. The PostgreSQL case runs in CI always; off CI it skips only when the database is unreachable.
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
import { POSTGRES_OWNERSHIP_MIGRATION, SQLITE_OWNERSHIP_SQL } from "./ownership_migration.ts";
import { COST_CLASS_COLUMNS_V10, type UsageTotals } from "./record.ts";
import type { UsageDatabase } from "./store.ts";
import { SQLITE_TOKENS_CACHE_SQL, SQLITE_TOKENS_SQL } from "../tokens/store_sqlite.ts";
import { POSTGRES_TOKENS_CACHE_MIGRATION, POSTGRES_TOKENS_MIGRATION } from "../tokens/postgres_migration.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";

type CostClass = typeof COST_CLASS_COLUMNS_V10[number];

/** A record the schema-6 (SQLite) / schema-5 (PostgreSQL) gateway wrote: `dropped` was its newest column. */
function droppedRow(bool: (b: boolean) => string): string {
  return `INSERT INTO usage (uid, time, request_id, token, token_id, environment, alias, provider,
       upstream_model, endpoint, stream, status, outcome, rule, prompt_tokens, completion_tokens,
       tokens_estimated, cost, latency_ms, ttft_ms, attempts, error_code, dropped)
     VALUES ('u_dropped', '2025-01-02T00:00:00.000Z', 'req_dropped', 'alice', 'cfg_alice', 'prod',
       'chat-default', 'openai', 'gpt-4o-mini', 'messages', ${bool(false)}, 200, 'allow', NULL, 20, 10, ${
    bool(false)
  }, 0.002,
       50, NULL, 1, NULL, 'tools.0')`;
}

/** Old records read back with the new columns' defaults; new records' cache outcomes are stored and summed. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  const old = (await db.listRecords({})).data;
  assert.deepEqual(
    old.map((r) => [r.request_id, r.dropped, r.cache, r.saved_tokens, r.saved_cost, r.trace_id]),
    [["req_dropped", "tools.0", null, 0, 0, null], ["req_old", null, null, 0, 0, null]],
  );
  const before = (await db.query({})).totals;
  assert.deepEqual(
    [before.requests, before.cache_hits, before.cache_lookups, before.saved_tokens, before.saved_cost],
    [2, 0, 0, 0, 0],
  );
  await db.insert([
    makeRecord(1, { time: "2025-01-03T00:00:00.000Z", cache: "hit", saved_tokens: 30, saved_cost: 0.002 }),
    makeRecord(2, { time: "2025-01-03T00:00:01.000Z", cache: "miss" }),
  ]);
  const [byAlias] = (await db.query({ group_by: ["alias"] })).groups;
  assert.deepEqual(
    [byAlias.key.alias, byAlias.requests, byAlias.cache_hits, byAlias.cache_lookups, byAlias.saved_tokens],
    ["chat-default", 4, 1, 2, 30],
  );
  assert.equal(byAlias.saved_cost, 0.002);
  const [newest] = (await db.listRecords({ limit: 1 })).data;
  assert.deepEqual([newest.cache, newest.saved_tokens, newest.saved_cost], ["miss", 0, 0]);
}

Deno.test("cache columns migration: SQLite schema 6 → 7 adds them with defaults, keeping the records", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "cache-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = new DatabaseSync(path);
    old.exec(SQLITE_SCHEMA_3);
    old.exec(SQLITE_TOKENS_SQL);
    old.exec(SQLITE_OWNERSHIP_SQL);
    old.exec("ALTER TABLE usage ADD COLUMN dropped TEXT; UPDATE usage_schema SET version = 6");
    old.exec(droppedRow((b) => (b ? "1" : "0")));
    old.close();

    const db = await open(path);
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(USAGE_SCHEMA_VERSION, 17);
    assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
    const columns = file.prepare("PRAGMA table_info(usage)").all()
      .filter((c) => ["cache", "saved_tokens", "saved_cost"].includes(String(c.name)))
      .map((c) => [c.name, c.type, c.notnull, c.dflt_value]);
    assert.deepEqual(columns, [
      ["cache", "TEXT", 0, null],
      ["saved_tokens", "INTEGER", 1, "0"],
      ["saved_cost", "REAL", 1, "0"],
    ]);
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache columns migration: PostgreSQL schema 5 → 6 adds them with defaults, keeping the records", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("cachemig");
  try {
    for (const statement of postgresSchema2(schema)) await queryOnce(statement);
    const sql = postgres(TEST_DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      for (const statement of POSTGRES_TOKENS_MIGRATION) await sql.unsafe(statement);
      for (const statement of POSTGRES_OWNERSHIP_MIGRATION) await sql.unsafe(statement);
      await sql.unsafe("ALTER TABLE usage ADD COLUMN dropped text");
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES (3), (4), (5)");
      await sql.unsafe(droppedRow((b) => String(b)));
    } finally {
      await sql.end({ timeout: 5 });
    }
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    assert.equal(POSTGRES_SCHEMA_VERSION, 16);
    const columns = await queryOnce(
      `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'usage'
         AND column_name IN ('cache', 'saved_tokens', 'saved_cost')
       ORDER BY ordinal_position`,
      [schema],
    );
    assert.deepEqual(columns.map((c) => [c.column_name, c.data_type, c.is_nullable, c.column_default]), [
      ["cache", "text", "YES", null],
      ["saved_tokens", "bigint", "NO", "0"],
      ["saved_cost", "double precision", "NO", "0"],
    ]);
  } finally {
    await dropSchema(schema);
  }
});

/** A record the schema-8 (SQLite) / schema-7 (PostgreSQL) gateway wrote: a cache hit, and no trace column. */
function cachedRow(bool: (b: boolean) => string): string {
  return `INSERT INTO usage (uid, time, request_id, token, token_id, environment, alias, provider,
       upstream_model, endpoint, stream, status, outcome, rule, prompt_tokens, completion_tokens,
       tokens_estimated, cost, latency_ms, ttft_ms, attempts, error_code, dropped, cache, saved_tokens,
       saved_cost)
     VALUES ('u_cached', '2025-01-02T00:00:00.000Z', 'req_cached', 'alice', 'cfg_alice', 'prod',
       'chat-default', 'openai', 'gpt-4o-mini', 'chat', ${bool(false)}, 200, 'allow', NULL, 0, 0, ${
    bool(false)
  }, 0, 5, NULL, 0, NULL, NULL, 'hit', 30, 0.002)`;
}

/** A SQLite file at `path` as the schema-8 gateway left it (before the trace column); the caller sets the version. */
function sqliteSchema8(path: string): DatabaseSync {
  const old = new DatabaseSync(path);
  old.exec(SQLITE_SCHEMA_3);
  old.exec(SQLITE_TOKENS_SQL);
  old.exec(SQLITE_OWNERSHIP_SQL);
  old.exec(`ALTER TABLE usage ADD COLUMN dropped TEXT;
    ALTER TABLE usage ADD COLUMN cache TEXT;
    ALTER TABLE usage ADD COLUMN saved_tokens INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE usage ADD COLUMN saved_cost REAL NOT NULL DEFAULT 0;`);
  old.exec(SQLITE_TOKENS_CACHE_SQL);
  return old;
}

/** Brings a schema-2 PostgreSQL schema to schema 7's tables (before the trace column); not its versions. */
async function postgresSchema7(sql: postgres.Sql): Promise<void> {
  for (const statement of POSTGRES_TOKENS_MIGRATION) await sql.unsafe(statement);
  for (const statement of POSTGRES_OWNERSHIP_MIGRATION) await sql.unsafe(statement);
  await sql.unsafe("ALTER TABLE usage ADD COLUMN dropped text");
  await sql.unsafe("ALTER TABLE usage ADD COLUMN cache text");
  await sql.unsafe("ALTER TABLE usage ADD COLUMN saved_tokens bigint NOT NULL DEFAULT 0");
  await sql.unsafe("ALTER TABLE usage ADD COLUMN saved_cost double precision NOT NULL DEFAULT 0");
  for (const statement of POSTGRES_TOKENS_CACHE_MIGRATION) await sql.unsafe(statement);
}

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

/** The old records read back untraced and otherwise as written; a new record's trace is stored and found. */
async function assertTraceMigrated(db: UsageDatabase): Promise<void> {
  const old = (await db.listRecords({})).data;
  assert.deepEqual(
    old.map((r) => [r.request_id, r.cache, r.saved_tokens, r.saved_cost, r.trace_id]),
    [["req_cached", "hit", 30, 0.002, null], ["req_old", null, 0, 0, null]],
  );
  await db.insert([makeRecord(1, { time: "2025-01-03T00:00:00.000Z", trace_id: TRACE })]);
  const found = (await db.listRecords({ trace_id: TRACE })).data;
  assert.deepEqual(found, [makeRecord(1, { time: "2025-01-03T00:00:00.000Z", trace_id: TRACE })]);
  assert.equal((await db.query({})).totals.requests, 3);
}

Deno.test("trace column migration: SQLite schema 8 → 9 adds trace_id, keeping the records", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "trace-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = sqliteSchema8(path);
    old.exec("UPDATE usage_schema SET version = 8");
    old.exec(cachedRow((b) => (b ? "1" : "0")));
    old.close();

    const db = await open(path);
    try {
      await assertTraceMigrated(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
    const column = file.prepare("PRAGMA table_info(usage)").all().find((c) => c.name === "trace_id");
    assert.deepEqual([column?.type, column?.notnull, column?.dflt_value], ["TEXT", 0, null]);
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("trace column migration: PostgreSQL schema 7 → 8 adds trace_id, keeping the records", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("tracemig");
  try {
    for (const statement of postgresSchema2(schema)) await queryOnce(statement);
    const sql = postgres(TEST_DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      await postgresSchema7(sql);
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES (3), (4), (5), (6), (7)");
      await sql.unsafe(cachedRow((b) => String(b)));
    } finally {
      await sql.end({ timeout: 5 });
    }
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertTraceMigrated(db);
    } finally {
      await db.close();
    }
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    const columns = await queryOnce(
      `SELECT data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'usage' AND column_name = 'trace_id'`,
      [schema],
    );
    assert.deepEqual(columns.map((c) => [c.data_type, c.is_nullable]), [["text", "YES"]]);
  } finally {
    await dropSchema(schema);
  }
});

/** A record the schema-9 (SQLite) / schema-8 (PostgreSQL) gateway wrote: traced, its cost not split. */
function tracedRow(bool: (b: boolean) => string): string {
  return `INSERT INTO usage (uid, time, request_id, token, token_id, environment, alias, provider,
       upstream_model, endpoint, stream, status, outcome, rule, prompt_tokens, completion_tokens,
       tokens_estimated, cost, latency_ms, ttft_ms, attempts, error_code, dropped, cache, saved_tokens,
       saved_cost, trace_id)
     VALUES ('u_traced', '2025-01-02T00:00:00.000Z', 'req_traced', 'alice', 'cfg_alice', 'prod',
       'chat-default', 'openai', 'gpt-4o-mini', 'chat', ${bool(false)}, 200, 'allow', NULL, 20, 10, ${
    bool(false)
  }, 0.5, 5, NULL, 1, NULL, NULL, NULL, 0, 0, '${TRACE}')`;
}

/** The old records read back with a zero split, everything else as written; a new record's split is summed. */
async function assertCostClassesMigrated(db: UsageDatabase): Promise<void> {
  const classes = (r: Partial<Pick<UsageTotals, CostClass>>) => COST_CLASS_COLUMNS_V10.map((c) => r[c]);
  const old = (await db.listRecords({})).data;
  assert.deepEqual(
    old.map((r) => [r.request_id, r.cost, r.trace_id, ...classes(r)]),
    [["req_traced", 0.5, TRACE, 0, 0, 0, 0, 0], ["req_old", 0.001, null, 0, 0, 0, 0, 0]],
  );
  assert.deepEqual(classes((await db.query({})).totals), [0, 0, 0, 0, 0]);
  const split = { cost: 2, cost_input: 0.25, cost_cached: 0.125, cost_cache_write: 0.5, cost_output: 0.125 };
  const fresh = makeRecord(1, { time: "2025-01-03T00:00:00.000Z", ...split, cost_reasoning: 1 });
  await db.insert([fresh]);
  assert.deepEqual((await db.listRecords({ limit: 1 })).data, [fresh]);
  const [byToken] = (await db.query({ group_by: ["token"] })).groups;
  const cost = Number(byToken.cost.toFixed(9));
  assert.deepEqual([byToken.key.token, byToken.requests, cost, ...classes(byToken)], [
    "alice",
    3,
    2.501,
    0.25,
    0.125,
    0.5,
    0.125,
    1,
  ]);
}

Deno.test("cost class migration: SQLite schema 9 → 10 adds the five columns with defaults, keeping the records", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "cost-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = sqliteSchema8(path);
    old.exec("ALTER TABLE usage ADD COLUMN trace_id TEXT; UPDATE usage_schema SET version = 9");
    old.exec(tracedRow((b) => (b ? "1" : "0")));
    old.close();

    const db = await open(path);
    try {
      await assertCostClassesMigrated(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
    const columns = file.prepare("PRAGMA table_info(usage)").all()
      .filter((c) => (COST_CLASS_COLUMNS_V10 as readonly string[]).includes(String(c.name)))
      .map((c) => [c.name, c.type, c.notnull, c.dflt_value]);
    assert.deepEqual(columns, COST_CLASS_COLUMNS_V10.map((c) => [c, "REAL", 1, "0"]));
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cost class migration: PostgreSQL schema 8 → 9 adds the five columns with defaults, keeping the records", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("costmig");
  try {
    for (const statement of postgresSchema2(schema)) await queryOnce(statement);
    const sql = postgres(TEST_DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      await postgresSchema7(sql);
      await sql.unsafe("ALTER TABLE usage ADD COLUMN trace_id text");
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES (3), (4), (5), (6), (7), (8)");
      await sql.unsafe(tracedRow((b) => String(b)));
    } finally {
      await sql.end({ timeout: 5 });
    }
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertCostClassesMigrated(db);
    } finally {
      await db.close();
    }
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    const columns = await queryOnce(
      `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'usage' AND column_name LIKE 'cost\\_%'
       ORDER BY ordinal_position`,
      [schema],
    );
    assert.deepEqual(
      columns.filter((c) => (COST_CLASS_COLUMNS_V10 as readonly string[]).includes(String(c.column_name)))
        .map((c) => [c.column_name, c.data_type, c.is_nullable, c.column_default]),
      COST_CLASS_COLUMNS_V10.map((c) => [c, "double precision", "NO", "0"]),
    );
  } finally {
    await dropSchema(schema);
  }
});
