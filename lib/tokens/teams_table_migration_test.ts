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
import { migratePostgres, migrateSqlite } from "../../tests/helpers/migration_cases.ts";
import { queryOnce } from "../../tests/helpers/postgres.ts";
import type { UsageDatabase } from "../usage/store.ts";
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
  team_id: "team_research",
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
  await migrateSqlite({
    from: 11,
    rows: oldTokenRows((b) => (b ? "1" : "0")),
    check: assertMigrated,
    inspect: (file) =>
      assert.ok(file.prepare("SELECT 1 FROM sqlite_master WHERE name = 'teams_live_name'").get()),
  });
});

Deno.test("stored teams migration: PostgreSQL schema 10 → 11 adds the teams table, keeping the tokens", async (t) => {
  await migratePostgres(t, {
    from: 10,
    rows: oldTokenRows((b) => String(b)),
    check: assertMigrated,
    async inspect(schema) {
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
    },
  });
});
