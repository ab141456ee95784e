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
import {
  migratePostgres,
  migrateSqlite,
  postgresColumns,
  sqliteColumn,
} from "../../tests/helpers/migration_cases.ts";
import type { UsageDatabase } from "../usage/store.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import type { StoredToken } from "./types.ts";
import { makeAudit } from "./store_contract_test_helpers.ts";

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
  await db.tokens.put(joined, audit(joined), OLD.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [joined]);
  const left: StoredToken = {
    ...joined,
    team: null,
    end_user_limits: null,
    guardrails: null,
    updated_at: "2026-11-24T09:00:02.000Z",
  };
  await db.tokens.put(left, audit(left), joined.updated_at);
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
  await migrateSqlite({
    from: 10,
    rows: oldTokenRows((b) => (b ? "1" : "0")),
    check: assertMigrated,
    inspect(file) {
      assert.deepEqual(sqliteColumn(file, "tokens", "team"), ["TEXT", 0, null]);
      assert.deepEqual(sqliteColumn(file, "tokens", "end_user_limits"), ["TEXT", 0, null]);
      assert.deepEqual(sqliteColumn(file, "usage", "team"), ["TEXT", 0, null]);
      assert.ok(file.prepare("SELECT 1 FROM sqlite_master WHERE name = 'usage_team_time'").get());
    },
  });
});

Deno.test("team columns migration: PostgreSQL schema 9 → 10 adds them, keeping the tokens and records", async (t) => {
  await migratePostgres(t, {
    from: 9,
    rows: oldTokenRows((b) => String(b)),
    check: assertMigrated,
    inspect: async (schema) =>
      assert.deepEqual(
        await postgresColumns(schema, ["tokens.team", "tokens.end_user_limits", "usage.team"]),
        [
          ["tokens", "end_user_limits", "json", "YES", null],
          ["tokens", "team", "text", "YES", null],
          ["usage", "team", "text", "YES", null],
        ],
      ),
  });
});
