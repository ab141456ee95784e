/**
 * The migration of issued tokens' guardrails (SQLite schema 13 → 14, PostgreSQL 12 → 13) on databases as the
 * earlier gateway left them: tokens gain `guardrails` (a token stored before reads back with null: no guardrails
 * of its own, as it was served); names are then written, read back in order and cleared; the column is nullable
 * JSON text (SQLite) or `json` (PostgreSQL). The old databases are the frozen schemas
 * (tests/helpers/frozen_schemas.ts) brought forward by the migrations that followed them. The PostgreSQL case
 * runs in CI always; off CI it skips only when the database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { UsageDatabase } from "../usage/store.ts";
import {
  migratePostgres,
  migrateSqlite,
  postgresColumns,
  sqliteColumn,
} from "../../tests/helpers/migration_cases.ts";
import type { StoredToken } from "./types.ts";
import { makeAudit } from "./store_contract_test_helpers.ts";

const TIME = "2026-12-01T09:00:00.000Z";

/** The token as the schema-13 (SQLite) / schema-12 (PostgreSQL) gateway stored it: no `guardrails` yet. */
function oldTokenRows(bool: (b: boolean) => string): string[] {
  return [
    `INSERT INTO tokens (id, name, environment, description, models, endpoints, limits, budget, max_tokens,
       cache, team, end_user_limits, expires_at, disabled, created_at, updated_at, created_by, revoked_at,
       rotated_at)
     VALUES ('tok_000000000000000000000003', 'before-guardrails', 'default', NULL, '["*"]', NULL, '{"rpm":5}',
       NULL, NULL, NULL, 'platform', NULL, NULL, ${
      bool(false)
    }, '${TIME}', '${TIME}', 'ops-admin', NULL, NULL)`,
    `INSERT INTO token_secrets (token_id, position, sha256, expires_at, expires_ms)
     VALUES ('tok_000000000000000000000003', 0, '${"e".repeat(64)}', NULL, NULL)`,
    "UPDATE token_version SET version = 1",
  ];
}

const OLD: StoredToken = {
  id: "tok_000000000000000000000003",
  name: "before-guardrails",
  environment: "default",
  description: null,
  models: ["*"],
  endpoints: null,
  limits: { rpm: 5 },
  budget: null,
  max_tokens: null,
  cache: null,
  team: "platform",
  team_id: "team_platform",
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

/** The audit entry of an update of `token` (the trail needs one per write). */
function audit(token: StoredToken) {
  return makeAudit(token, { time: token.updated_at, action: "update", changes: {} });
}

/** The old token reads back with no guardrails; names are then written, read back in order, and cleared. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  assert.deepEqual(await db.tokens.loadAll(), { version: 1, tokens: [OLD], teams: [] });
  const guarded: StoredToken = {
    ...OLD,
    guardrails: ["no-cards", "moderation"],
    updated_at: "2026-12-01T09:00:01.000Z",
  };
  await db.tokens.put(guarded, audit(guarded), OLD.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [guarded]);
  const cleared: StoredToken = { ...guarded, guardrails: null, updated_at: "2026-12-01T09:00:02.000Z" };
  await db.tokens.put(cleared, audit(cleared), guarded.updated_at);
  assert.deepEqual((await db.tokens.loadAll()).tokens, [cleared]);
}

Deno.test("token guardrails migration: SQLite schema 13 → 14 adds the column, keeping the tokens", async () => {
  await migrateSqlite({
    from: 13,
    rows: oldTokenRows((b) => (b ? "1" : "0")),
    check: assertMigrated,
    inspect(file) {
      assert.deepEqual(sqliteColumn(file, "tokens", "guardrails"), ["TEXT", 0, null]);
      assert.equal(file.prepare("SELECT guardrails FROM tokens").get()?.guardrails, null);
    },
  });
});

Deno.test("token guardrails migration: PostgreSQL schema 12 → 13 adds the column, keeping the tokens", async (t) => {
  await migratePostgres(t, {
    from: 12,
    rows: oldTokenRows((b) => String(b)),
    check: assertMigrated,
    inspect: async (schema) =>
      assert.deepEqual(await postgresColumns(schema, ["tokens.guardrails"]), [[
        "tokens",
        "guardrails",
        "json",
        "YES",
        null,
      ]]),
  });
});
