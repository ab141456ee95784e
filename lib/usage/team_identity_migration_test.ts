/**
 * The team identity migration (SQLite schema 14 → 15, PostgreSQL 13 → 14) on databases as the earlier gateway
 * left them: each record with a team gets the identity of the team that had the name when it was written (the
 * team made through the admin API whose life covers it, else the config file's `team_<name>`), records of no
 * team keep none, and everything else is kept; budgets are then seeded by the identity, so a team made, or
 * declared, under a deleted team's name does not inherit its spend. The PostgreSQL case runs in CI always; off
 * CI it skips only when the database is unreachable.
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
import type { UsageDatabase } from "./store.ts";

/**
 * Two teams named `growth` made through the admin API (the first deleted on the 5th, the second made on the
 * 10th; the file's `growth` served between them), as the schema-14 (SQLite) / schema-13 (PostgreSQL) gateway
 * left them.
 */
const TEAMS = `INSERT INTO teams (id, name, created_at, updated_at, created_by, deleted_at) VALUES
     ('tm_old', 'growth', '2025-01-01T00:00:00.000Z', '2025-01-05T00:00:00.000Z', 'ops', '2025-01-05T00:00:00.000Z'),
     ('tm_new', 'growth', '2025-01-10T00:00:00.000Z', '2025-01-10T00:00:00.000Z', 'ops', NULL)`;

/** A record of that gateway (`guardrails` its newest column) made under `team` (SQL) at day `day` of January. */
function row(bool: (b: boolean) => string, n: number, day: number, team: string): string {
  const time = `2025-01-${String(day).padStart(2, "0")}T12:00:00.000Z`;
  return `INSERT INTO usage (uid, time, request_id, token, token_id, environment, alias, provider,
       upstream_model, endpoint, stream, status, outcome, rule, prompt_tokens, completion_tokens,
       tokens_estimated, cost, latency_ms, ttft_ms, attempts, error_code, team, guardrails)
     VALUES ('u_team${n}', '${time}', 'req_${n}', 'alice', 'cfg_alice', 'prod', 'chat-default', 'openai',
       'gpt-4o-mini', 'chat', ${bool(false)}, 200, 'allow', NULL, ${n}, 0, ${bool(false)}, 0, 50, NULL, 1,
       NULL, ${team}, NULL)`;
}

function rows(bool: (b: boolean) => string): string[] {
  return [
    TEAMS,
    row(bool, 1, 2, "'growth'"), // the first stored team's
    row(bool, 2, 7, "'growth'"), // the file's, between the stored ones
    row(bool, 3, 11, "'growth'"), // the second stored team's
    row(bool, 4, 11, "'platform'"), // a config team no stored team ever shared a name with
    row(bool, 5, 11, "NULL"), // a token of no team
  ];
}

/** Every record has the identity its time gives it, sums and filters follow it, and new records keep theirs. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  const log = (await db.listRecords({})).data;
  assert.deepEqual(log.map((r) => [r.request_id, r.team, r.team_id]), [
    ["req_5", null, null],
    ["req_4", "platform", "team_platform"],
    ["req_3", "growth", "tm_new"],
    ["req_2", "growth", "team_growth"],
    ["req_1", "growth", "tm_old"],
    ["req_old", null, null],
  ]);
  const since = "2025-01-01T00:00:00.000Z";
  assert.deepEqual(await db.sumTeamSince("tm_old", since), { tokens: 1, cost: 0 });
  assert.deepEqual(await db.sumTeamSince("team_growth", since), { tokens: 2, cost: 0 });
  assert.deepEqual(await db.sumTeamSince("tm_new", since), { tokens: 3, cost: 0 });
  assert.deepEqual(await db.sumTeamSince("team_platform", since), { tokens: 4, cost: 0 });
  assert.equal(
    (await db.query({ team: "growth" })).totals.prompt_tokens,
    6,
    "by name: every team that had it",
  );
  assert.equal((await db.query({ team_id: "tm_new" })).totals.requests, 1);
}

Deno.test("team identity migration: SQLite schema 14 → 15 attributes each record to the team of its time", async () => {
  await migrateSqlite({
    from: 14,
    rows: rows((b) => (b ? "1" : "0")),
    check: assertMigrated,
    inspect(file) {
      assert.deepEqual(sqliteColumn(file, "usage", "team_id"), ["TEXT", 0, null]);
      const index = file.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'usage_team_id_time'",
      )
        .get();
      assert.equal(index?.name, "usage_team_id_time");
    },
  });
});

Deno.test("team identity migration: PostgreSQL schema 13 → 14 attributes each record to the team of its time", async (t) => {
  await migratePostgres(t, {
    from: 13,
    rows: rows((b) => String(b)),
    check: assertMigrated,
    inspect: async (schema) =>
      assert.deepEqual(await postgresColumns(schema, ["usage.team_id"]), [[
        "usage",
        "team_id",
        "text",
        "YES",
        null,
      ]]),
  });
});
