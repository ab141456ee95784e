/**
 * The stored teams' migration (SQLite schema 11 → 12, PostgreSQL 10 → 11) on databases as the earlier gateway
 * left them: a `teams` table appears beside the tokens, which are kept as they were (a token already naming a
 * team keeps that name); the old database loads with no teams, and a team is then written, audited, refused a
 * second live name and read back. The old databases are the frozen schemas (tests/helpers/frozen_schemas.ts)
 * brought forward by the migrations that followed them. The PostgreSQL case runs in CI always; off CI it skips
 * only when the database is unreachable.
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
import { SQLITE_TOKENS_CACHE_SQL, SQLITE_TOKENS_SQL, SQLITE_TOKENS_TEAM_SQL } from "./store_sqlite.ts";
import {
  POSTGRES_TOKENS_CACHE_MIGRATION,
  POSTGRES_TOKENS_MIGRATION,
  POSTGRES_TOKENS_TEAM_MIGRATION,
} from "./postgres_migration.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";
import { type StoredTeam, type StoredToken, TeamNameTakenError } from "./types.ts";

const TIME = "2026-11-24T09:00:00.000Z";

/** A token as the schema-11 (SQLite) / schema-10 (PostgreSQL) gateway stored it: in a config team. */
function oldTokenRows(bool: (b: boolean) => string): string[] {
  return [
    `INSERT INTO tokens (id, name, environment, description, models, endpoints, limits, budget, max_tokens,
       cache, team, end_user_limits, expires_at, disabled, created_at, updated_at, created_by, revoked_at,
       rotated_at)
     VALUES ('tok_000000000000000000000001', 'before-stored-teams', 'default', NULL, '["*"]', NULL, NULL, NULL,
       NULL, NULL, 'research', NULL, NULL, ${bool(false)}, '${TIME}', '${TIME}', 'ops-admin', NULL, NULL)`,
    `INSERT INTO token_secrets (token_id, position, sha256, expires_at, expires_ms)
     VALUES ('tok_000000000000000000000001', 0, '${"e".repeat(64)}', NULL, NULL)`,
    "UPDATE token_version SET version = 1",
  ];
}

const OLD: StoredToken = {
  id: "tok_000000000000000000000001",
  name: "before-stored-teams",
  environment: "default",
  description: null,
  models: ["*"],
  endpoints: null,
  limits: null,
  budget: null,
  max_tokens: null,
  cache: null,
  team: "research",
  end_user_limits: null,
  guardrails: null,
  expires_at: null,
  disabled: false,
  created_at: TIME,
  updated_at: TIME,
  created_by: "ops-admin",
  revoked_at: null,
  rotated_at: null,
  secrets: [{ sha256: "e".repeat(64), expires_at: null }],
};

const TEAM: StoredTeam = {
  id: "tm_000000000000000000000001",
  name: "platform",
  description: null,
  budget: { tokens: 1000, period: "day" },
  limits: { rpm: 5 },
  models: null,
  created_at: TIME,
  updated_at: TIME,
  created_by: "ops-admin",
  deleted_at: null,
};

function audit(n: number) {
  return {
    id: `aud_${n.toString(16).padStart(24, "0")}`,
    time: TIME,
    actor: "ops-admin",
    action: "create" as const,
    token_id: TEAM.id,
    token_name: TEAM.name,
    changes: { name: TEAM.name },
  };
}

/** The old token is kept; there are no teams until one is written, which then reads back and is audited. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  assert.deepEqual(await db.tokens.loadAll(), { version: 1, tokens: [OLD], teams: [] });
  await db.tokens.putTeam(TEAM, audit(1), null);
  assert.deepEqual(await db.tokens.loadAll(), { version: 2, tokens: [OLD], teams: [TEAM] });
  const again = { ...TEAM, id: "tm_000000000000000000000002" };
  await assert.rejects(db.tokens.putTeam(again, audit(2)), TeamNameTakenError);
  assert.deepEqual((await db.tokens.audit({ limit: 10, token: "platform" })).entries, [audit(1)]);
}

Deno.test("stored teams migration: SQLite schema 11 → 12 adds the teams table, keeping the tokens", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "teams-migrate-" });
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
    old.exec(`${SQLITE_TOKENS_TEAM_SQL}
      ALTER TABLE usage ADD COLUMN team TEXT;
      CREATE INDEX usage_team_time ON usage (team, time) WHERE team IS NOT NULL;`);
    old.exec("UPDATE usage_schema SET version = 11");
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
    assert.ok(file.prepare("SELECT 1 FROM sqlite_master WHERE name = 'teams_live_name'").get());
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("stored teams migration: PostgreSQL schema 10 → 11 adds the teams table, keeping the tokens", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("teamsmig");
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
      for (const statement of POSTGRES_TOKENS_TEAM_MIGRATION) await sql.unsafe(statement);
      await sql.unsafe("ALTER TABLE usage ADD COLUMN team text");
      await sql.unsafe("CREATE INDEX usage_team_time ON usage (team, time) WHERE team IS NOT NULL");
      await sql.unsafe(
        "INSERT INTO schema_versions (version) VALUES (3), (4), (5), (6), (7), (8), (9), (10)",
      );
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
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'teams' ORDER BY ordinal_position`,
      [schema],
    );
    assert.deepEqual(columns.map((c) => [c.column_name, c.data_type, c.is_nullable]), [
      ["id", "text", "NO"],
      ["name", "text", "NO"],
      ["description", "text", "YES"],
      ["budget", "json", "YES"],
      ["limits", "json", "YES"],
      ["models", "json", "YES"],
      ["created_at", "text", "NO"],
      ["updated_at", "text", "NO"],
      ["created_by", "text", "NO"],
      ["deleted_at", "text", "YES"],
    ]);
  } finally {
    await dropSchema(schema);
  }
});
