/**
 * The teams' migration (SQLite schema 10 → 11, PostgreSQL 9 → 10) on databases as the earlier gateway left
 * them: tokens gain `team` and `end_user_limits` (a token stored before reads back with both null: in no team,
 * no end-user limits, as it was served) and usage records gain `team` (null: none then); both are written and
 * read back after it, and `team=` and `group_by=team` see the new records. The old databases are the frozen
 * schemas (tests/helpers/frozen_schemas.ts) brought forward by the migrations that followed them. The
 * PostgreSQL case runs in CI always; off CI it skips only when the database is unreachable.
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
import { COST_CLASS_COLUMNS } from "../usage/record.ts";
import type { UsageDatabase } from "../usage/store.ts";
import { SQLITE_TOKENS_CACHE_SQL, SQLITE_TOKENS_SQL } from "./store_sqlite.ts";
import { POSTGRES_TOKENS_CACHE_MIGRATION, POSTGRES_TOKENS_MIGRATION } from "./postgres_migration.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";
import type { AuditEntry, StoredToken } from "./types.ts";

const TIME = "2026-11-24T09:00:00.000Z";

/** The token as the schema-10 (SQLite) / schema-9 (PostgreSQL) gateway stored it: no team columns yet. */
function oldTokenRows(bool: (b: boolean) => string): string[] {
  return [
    `INSERT INTO tokens (id, name, environment, description, models, endpoints, limits, budget, max_tokens,
       cache, expires_at, disabled, created_at, updated_at, created_by, revoked_at, rotated_at)
     VALUES ('tok_000000000000000000000001', 'before-teams', 'default', NULL, '["*"]', NULL, '{"rpm":5}', NULL,
       NULL, 'false', NULL, ${bool(false)}, '${TIME}', '${TIME}', 'ops-admin', NULL, NULL)`,
    `INSERT INTO token_secrets (token_id, position, sha256, expires_at, expires_ms)
     VALUES ('tok_000000000000000000000001', 0, '${"d".repeat(64)}', NULL, NULL)`,
    "UPDATE token_version SET version = 1",
  ];
}

const OLD: StoredToken = {
  id: "tok_000000000000000000000001",
  name: "before-teams",
  environment: "default",
  description: null,
  models: ["*"],
  endpoints: null,
  limits: { rpm: 5 },
  budget: null,
  max_tokens: null,
  cache: false,
  team: null,
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

function audit(n: number, token: StoredToken): AuditEntry {
  return {
    id: `aud_${n.toString(16).padStart(24, "0")}`,
    time: token.updated_at,
    actor: "ops-admin",
    action: "update",
    token_id: token.id,
    token_name: token.name,
    changes: {},
  };
}

/**
 * The old token reads back in no team and without end-user limits; both are then written and read back, and
 * cleared. The old usage record reads back with no team; a new one's team is stored, filtered and grouped on.
 */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  assert.deepEqual(await db.tokens.loadAll(), { version: 1, tokens: [OLD], teams: [] });
  const joined: StoredToken = {
    ...OLD,
    team: "platform",
    end_user_limits: { rpm: 10, budget: { cost: 1, period: "day" }, max_users: 100 },
    updated_at: "2026-11-24T09:00:01.000Z",
  };
  await db.tokens.put(joined, audit(1, joined), OLD.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [joined]);
  const left: StoredToken = {
    ...joined,
    team: null,
    end_user_limits: null,
    guardrails: null,
    updated_at: "2026-11-24T09:00:02.000Z",
  };
  await db.tokens.put(left, audit(2, left), joined.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [left]);

  const [old] = (await db.listRecords({})).data;
  assert.deepEqual([old.request_id, old.team], ["req_old", null]);
  await db.insert([makeRecord(1, { time: "2025-01-03T00:00:00.000Z", team: "platform" })]);
  const found = (await db.listRecords({ team: "platform" })).data;
  assert.deepEqual(found.map((r) => [r.request_id, r.team]), [["req_1", "platform"]]);
  const groups = (await db.query({ group_by: ["team"] })).groups;
  assert.deepEqual(groups.map((g) => [g.key.team, g.requests]), [[null, 1], ["platform", 1]]);
  assert.equal((await db.query({ team: "platform" })).totals.requests, 1);
}

Deno.test("team columns migration: SQLite schema 10 → 11 adds them, keeping the tokens and records", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "team-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = new DatabaseSync(path);
    old.exec(SQLITE_SCHEMA_3);
    old.exec(SQLITE_TOKENS_SQL);
    old.exec(SQLITE_OWNERSHIP_SQL);
    old.exec(`ALTER TABLE usage ADD COLUMN dropped TEXT;
      ALTER TABLE usage ADD COLUMN cache TEXT;
      ALTER TABLE usage ADD COLUMN saved_tokens INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE usage ADD COLUMN saved_cost REAL NOT NULL DEFAULT 0;`);
    old.exec(SQLITE_TOKENS_CACHE_SQL);
    old.exec("ALTER TABLE usage ADD COLUMN trace_id TEXT;");
    old.exec(
      COST_CLASS_COLUMNS.map((c) => `ALTER TABLE usage ADD COLUMN ${c} REAL NOT NULL DEFAULT 0;`).join("\n"),
    );
    old.exec("UPDATE usage_schema SET version = 10");
    for (const statement of oldTokenRows((b) => (b ? "1" : "0"))) old.exec(statement);
    old.close();

    const db = await open(path);
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const file = new DatabaseSync(path);
    assert.equal(USAGE_SCHEMA_VERSION, 14);
    assert.equal(file.prepare("SELECT version FROM usage_schema").get()?.version, 14);
    const columnOf = (table: string, name: string) => {
      const c = file.prepare(`PRAGMA table_info(${table})`).all().find((c) => c.name === name);
      return [c?.type, c?.notnull, c?.dflt_value];
    };
    assert.deepEqual(columnOf("tokens", "team"), ["TEXT", 0, null]);
    assert.deepEqual(columnOf("tokens", "end_user_limits"), ["TEXT", 0, null]);
    assert.deepEqual(columnOf("usage", "team"), ["TEXT", 0, null]);
    assert.ok(file.prepare("SELECT 1 FROM sqlite_master WHERE name = 'usage_team_time'").get());
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("team columns migration: PostgreSQL schema 9 → 10 adds them, keeping the tokens and records", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("teammig");
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
      for (const statement of POSTGRES_TOKENS_CACHE_MIGRATION) await sql.unsafe(statement);
      await sql.unsafe("ALTER TABLE usage ADD COLUMN trace_id text");
      for (const c of COST_CLASS_COLUMNS) {
        await sql.unsafe(`ALTER TABLE usage ADD COLUMN ${c} double precision NOT NULL DEFAULT 0`);
      }
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES (3), (4), (5), (6), (7), (8), (9)");
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
    assert.equal(POSTGRES_SCHEMA_VERSION, 13);
    assert.deepEqual(versions.map((r) => Number(r.version)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    const columns = await queryOnce(
      `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = $1 AND column_name IN ('team', 'end_user_limits')
       ORDER BY table_name, column_name`,
      [schema],
    );
    assert.deepEqual(columns.map((c) => [c.table_name, c.column_name, c.data_type, c.is_nullable]), [
      ["tokens", "end_user_limits", "json", "YES"],
      ["tokens", "team", "text", "YES"],
      ["usage", "team", "text", "YES"],
    ]);
  } finally {
    await dropSchema(schema);
  }
});
