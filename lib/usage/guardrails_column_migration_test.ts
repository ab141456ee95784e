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
import { postgresAt, sqliteAt } from "../../tests/helpers/old_databases.ts";
import { DatabaseSync } from "node:sqlite";
import { createSqliteStore, USAGE_SCHEMA_VERSION } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { POSTGRES_SCHEMA_VERSION } from "./postgres_schema.ts";
import type { GuardrailOutcome } from "./record.ts";
import type { UsageDatabase } from "./store.ts";
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
    const old = sqliteAt(path, 12);
    old.exec(teamRow((b) => (b ? "1" : "0")));
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
    await postgresAt(schema, 11, [teamRow((b) => String(b))]);
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
