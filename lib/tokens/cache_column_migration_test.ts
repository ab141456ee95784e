/**
 * The tokens' `cache` column arrives by schema migration (SQLite 7 → 8, PostgreSQL 6 → 7) in databases the
 * earlier gateway wrote: a token stored before it comes back with `cache: null` (as it was served: by its
 * requests' headers), and keeps working; `false` and an object written after it come back as written. The old
 * databases are the frozen schemas (tests/helpers/frozen_schemas.ts) brought forward by the migrations that
 * followed them. The PostgreSQL case runs in CI always; off CI it skips only when the database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { createSqliteStore, USAGE_SCHEMA_VERSION } from "../usage/sqlite_store.ts";
import { openSqliteWorkerStore } from "../usage/sqlite_worker_store.ts";
import { openPostgresStore } from "../usage/postgres_store.ts";
import { POSTGRES_SCHEMA_VERSION } from "../usage/postgres_schema.ts";
import { POSTGRES_OWNERSHIP_MIGRATION, SQLITE_OWNERSHIP_SQL } from "../usage/ownership_migration.ts";
import type { UsageDatabase } from "../usage/store.ts";
import { SQLITE_TOKENS_SQL } from "./store_sqlite.ts";
import { POSTGRES_TOKENS_MIGRATION } from "./postgres_migration.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";
import type { StoredToken } from "./types.ts";
import { makeAudit } from "./store_contract_test_helpers.ts";

const TIME = "2026-11-24T09:00:00.000Z";

/** The token as the schema-7 (SQLite) / schema-6 (PostgreSQL) gateway stored it: no `cache` column yet. */
function oldTokenRows(bool: (b: boolean) => string): string[] {
  return [
    `INSERT INTO tokens (id, name, environment, description, models, endpoints, limits, budget, max_tokens,
       expires_at, disabled, created_at, updated_at, created_by, revoked_at, rotated_at)
     VALUES ('tok_000000000000000000000001', 'before-cache', 'default', NULL, '["*"]', NULL, '{"rpm":5}', NULL,
       NULL, NULL, ${bool(false)}, '${TIME}', '${TIME}', 'ops-admin', NULL, NULL)`,
    `INSERT INTO token_secrets (token_id, position, sha256, expires_at, expires_ms)
     VALUES ('tok_000000000000000000000001', 0, '${"d".repeat(64)}', NULL, NULL)`,
    "UPDATE token_version SET version = 1",
  ];
}

const OLD: StoredToken = {
  id: "tok_000000000000000000000001",
  name: "before-cache",
  environment: "default",
  description: null,
  models: ["*"],
  endpoints: null,
  limits: { rpm: 5 },
  budget: null,
  max_tokens: null,
  cache: null,
  team: null,
  team_id: null,
  end_user_limits: null,
  guardrails: null,
  expires_at: null,
  disabled: false,
  created_at: TIME,
  updated_at: TIME,
  created_by: "ops-admin",
  revoked_at: null,
  rotated_at: null,
  secrets: [{ sha256: "d".repeat(64), expires_at: null }],
};

/** The audit entry of an update of `token` (the trail needs one per write). */
function audit(token: StoredToken) {
  return makeAudit(token, { time: token.updated_at, action: "update", changes: {} });
}

/** The old token reads back with no cache settings; `false`, then an object, are written and read back. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  assert.deepEqual(await db.tokens.loadAll(), { version: 1, tokens: [OLD], teams: [] });
  const off: StoredToken = { ...OLD, cache: false, updated_at: "2026-11-24T09:00:01.000Z" };
  await db.tokens.put(off, audit(off), OLD.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [off]);
  const aged: StoredToken = {
    ...off,
    cache: { no_store: false, no_cache: false, max_age: 600_000 },
    updated_at: "2026-11-24T09:00:02.000Z",
  };
  await db.tokens.put(aged, audit(aged), off.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [aged]);
}

Deno.test("token cache column migration: SQLite schema 7 → 8 adds it, keeping the tokens", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "token-cache-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = new DatabaseSync(path);
    old.exec(SQLITE_SCHEMA_3);
    old.exec(SQLITE_TOKENS_SQL);
    old.exec(SQLITE_OWNERSHIP_SQL);
    old.exec(`ALTER TABLE usage ADD COLUMN dropped TEXT;
      ALTER TABLE usage ADD COLUMN cache TEXT;
      ALTER TABLE usage ADD COLUMN saved_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE usage ADD COLUMN saved_cost REAL NOT NULL DEFAULT 0;
      UPDATE usage_schema SET version = 7;`);
    for (const statement of oldTokenRows((b) => (b ? "1" : "0"))) old.exec(statement);
    old.close();

    const db = await open(path);
    try {
      await assertMigrated(db);
      assert.equal((await db.query({})).totals.requests, 1, "the usage record survived");
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(USAGE_SCHEMA_VERSION, 17);
    assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
    const column = file.prepare("PRAGMA table_info(tokens)").all().find((c) => c.name === "cache");
    assert.deepEqual([column?.type, column?.notnull, column?.dflt_value], ["TEXT", 0, null]);
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token cache column migration: PostgreSQL schema 6 → 7 adds it, keeping the tokens", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("tokcachemig");
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
      await sql.unsafe("ALTER TABLE usage ADD COLUMN cache text");
      await sql.unsafe("ALTER TABLE usage ADD COLUMN saved_tokens bigint NOT NULL DEFAULT 0");
      await sql.unsafe("ALTER TABLE usage ADD COLUMN saved_cost double precision NOT NULL DEFAULT 0");
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES (3), (4), (5), (6)");
      for (const statement of oldTokenRows((b) => String(b))) await sql.unsafe(statement);
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
    assert.equal(POSTGRES_SCHEMA_VERSION, 16);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    const columns = await queryOnce(
      `SELECT data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'tokens' AND column_name = 'cache'`,
      [schema],
    );
    assert.deepEqual(columns.map((c) => [c.data_type, c.is_nullable]), [["json", "YES"]]);
  } finally {
    await dropSchema(schema);
  }
});
