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
import {
  migratePostgres,
  migrateSqlite,
  postgresColumns,
  sqliteColumn,
} from "../../tests/helpers/migration_cases.ts";
import type { GuardrailOutcome } from "./record.ts";
import type { UsageDatabase } from "./store.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";

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
  await migrateSqlite({
    from: 12,
    rows: [teamRow((b) => (b ? "1" : "0"))],
    check: assertMigrated,
    inspect(file) {
      assert.deepEqual(sqliteColumn(file, "usage", "guardrails"), ["TEXT", 0, null]);
      assert.equal(
        file.prepare("SELECT guardrails FROM usage WHERE uid = 'u_new'").get()?.guardrails,
        JSON.stringify(OUTCOMES),
      );
    },
  });
});

Deno.test("guardrails column migration: PostgreSQL schema 11 → 12 adds it, keeping the records", async (t) => {
  await migratePostgres(t, {
    from: 11,
    rows: [teamRow((b) => String(b))],
    check: assertMigrated,
    inspect: async (schema) =>
      assert.deepEqual(await postgresColumns(schema, ["usage.guardrails"]), [[
        "usage",
        "guardrails",
        "json",
        "YES",
        null,
      ]]),
  });
});
