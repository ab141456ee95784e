/**
 * The guardrails column's migration (SQLite schema 12 → 13, PostgreSQL 11 → 12) on databases as the earlier
 * gateway left them: their records gain `guardrails` (null: no guardrail then) and keep everything else; a new
 * record's outcomes are stored, read back and found by `guardrail=`; the column is nullable JSON text (SQLite)
 * or `json` (PostgreSQL). The old databases are the frozen schemas (tests/helpers/frozen_schemas.ts) brought
 * forward by the migrations that followed them. The PostgreSQL case runs in CI always; off CI it skips only when
 * the database is unreachable.
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
import { COST_CLASS_COLUMNS, type GuardrailOutcome } from "./record.ts";
import type { UsageDatabase } from "./store.ts";
import {
  SQLITE_TEAMS_SQL,
  SQLITE_TOKENS_CACHE_SQL,
  SQLITE_TOKENS_SQL,
  SQLITE_TOKENS_TEAM_SQL,
} from "../tokens/store_sqlite.ts";
import {
  POSTGRES_TEAMS_MIGRATION,
  POSTGRES_TOKENS_CACHE_MIGRATION,
  POSTGRES_TOKENS_MIGRATION,
  POSTGRES_TOKENS_TEAM_MIGRATION,
} from "../tokens/postgres_migration.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";

const OUTCOMES: GuardrailOutcome[] = [{ name: "pii", phase: "input", action: "mask", types: ["email"] }];

/** A record the schema-12 (SQLite) / schema-11 (PostgreSQL) gateway wrote: `team` was its newest column. */
function teamRow(bool: (b: boolean) => string): string {
  return `INSERT INTO usage (uid, time, request_id, token, token_id, environment, alias, provider,
       upstream_model, endpoint, stream, status, outcome, rule, prompt_tokens, completion_tokens,
       tokens_estimated, cost, latency_ms, ttft_ms, attempts, error_code, team)
     VALUES ('u_team', '2025-01-02T00:00:00.000Z', 'req_team', 'alice', 'cfg_alice', 'prod',
       'chat-default', 'openai', 'gpt-4o-mini', 'chat', ${bool(false)}, 200, 'allow', NULL, 20, 10,
       ${bool(false)}, 0.002, 50, NULL, 1, NULL, 'platform')`;
}

/** Old records read back with no guardrails; a new record's are stored, read back and filtered on. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  const old = (await db.listRecords({})).data;
  assert.deepEqual(old.map((r) => [r.request_id, r.team, r.guardrails]), [
    ["req_team", "platform", null],
    ["req_old", null, null],
  ]);
  assert.deepEqual((await db.listRecords({ guardrail: "pii" })).data, []);
  await db.insert([{
    ...makeRecord(1, { time: "2025-01-03T00:00:00.000Z", guardrails: OUTCOMES }),
    uid: "u_new",
  }]);
  const found = (await db.listRecords({ guardrail: "pii" })).data;
  assert.deepEqual(found, [makeRecord(1, { time: "2025-01-03T00:00:00.000Z", guardrails: OUTCOMES })]);
  assert.equal((await db.query({})).totals.requests, 3);
}

Deno.test("guardrails column migration: SQLite schema 12 → 13 adds it, keeping the records", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "guardrails-migrate-" });
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
    old.exec(SQLITE_TEAMS_SQL);
    old.exec("UPDATE usage_schema SET version = 12");
    old.exec(teamRow((b) => (b ? "1" : "0")));
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
    const column = file.prepare("PRAGMA table_info(usage)").all().find((c) => c.name === "guardrails");
    assert.deepEqual([column?.type, column?.notnull, column?.dflt_value], ["TEXT", 0, null]);
    assert.equal(
      file.prepare("SELECT guardrails FROM usage WHERE uid = 'u_new'").get()?.guardrails,
      JSON.stringify(OUTCOMES),
    );
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("guardrails column migration: PostgreSQL schema 11 → 12 adds it, keeping the records", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("guardmig");
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
      for (const statement of POSTGRES_TEAMS_MIGRATION) await sql.unsafe(statement);
      await sql.unsafe(
        "INSERT INTO schema_versions (version) VALUES (3), (4), (5), (6), (7), (8), (9), (10), (11)",
      );
      await sql.unsafe(teamRow((b) => String(b)));
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
      `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = $1 AND table_name = 'usage' AND column_name = 'guardrails'`,
      [schema],
    );
    assert.deepEqual(columns.map((c) => [c.column_name, c.data_type, c.is_nullable, c.column_default]), [
      ["guardrails", "json", "YES", null],
    ]);
  } finally {
    await dropSchema(schema);
  }
});
