/**
 * The migration of issued tokens' team identity (SQLite schema 15 → 17, PostgreSQL 14 → 16) on databases as the
 * earlier gateway left them: each token naming a team gets the id of the team that has that name at migration
 * time — a live stored team's `tm_…` id, else the config file's `team_<name>` — a revoked token the team whose
 * life covered its revocation, and a token of no team keeps NULL. The old databases are the frozen schemas
 * (tests/helpers/frozen_schemas.ts) brought forward by the migrations that followed them. The PostgreSQL case
 * runs in CI always; off CI it skips only when the database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  migratePostgres,
  migrateSqlite,
  SQLITE_OPENERS,
  sqliteColumn,
} from "../../tests/helpers/migration_cases.ts";
import type { UsageDatabase } from "../usage/store.ts";
import { makeAudit } from "./store_contract_test_helpers.ts";

const T = (h: number) => `2026-12-01T${String(h).padStart(2, "0")}:00:00.000Z`;

/** Teams: `research` live; `platform` made, deleted, and made again (another id). */
const TEAMS: readonly [string, string, string, string | null][] = [
  ["tm_00000000000000000000000a", "research", T(1), null],
  ["tm_00000000000000000000000b", "platform", T(1), T(4)],
  ["tm_00000000000000000000000c", "platform", T(5), null],
];

/** Tokens by name: [team name, revoked at] and the id the migration must give them. */
const TOKENS: readonly [string, string | null, string | null, string | null][] = [
  ["in-research", "research", null, "tm_00000000000000000000000a"],
  ["in-config-ops", "ops", null, "team_ops"], // no stored team has the name: the config's (or a dropped one's)
  ["revoked-in-old-platform", "platform", T(3), "tm_00000000000000000000000b"],
  ["live-in-platform", "platform", null, "tm_00000000000000000000000c"],
  ["no-team", null, null, null],
];

function oldRows(bool: (b: boolean) => string): string[] {
  const q = (v: string | null) => v === null ? "NULL" : `'${v}'`;
  const rows = TEAMS.map(([id, name, created, deleted]) =>
    `INSERT INTO teams (id, name, description, budget, limits, models, created_at, updated_at, created_by,
       deleted_at) VALUES ('${id}', '${name}', NULL, NULL, NULL, NULL, '${created}', '${deleted ?? created}',
       'ops', ${q(deleted)})`
  );
  TOKENS.forEach(([name, team, revoked], i) => {
    rows.push(`INSERT INTO tokens (id, name, environment, description, models, endpoints, limits, budget,
       max_tokens, cache, team, end_user_limits, guardrails, expires_at, disabled, created_at, updated_at,
       created_by, revoked_at, rotated_at)
     VALUES ('tok_00000000000000000000000${i}', '${name}', 'default', NULL, '["*"]', NULL, NULL, NULL, NULL, NULL,
       ${q(team)}, NULL, NULL, NULL, ${bool(false)}, '${T(0)}', '${T(0)}', 'ops', ${q(revoked)}, NULL)`);
  });
  rows.push("UPDATE token_version SET version = 1");
  return rows;
}

/** Every token has the id expected; a team's delete now checks members by id. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  const { tokens } = await db.tokens.loadAll();
  const byName = new Map(tokens.map((t) => [t.name, t]));
  for (const [name, team, , id] of TOKENS) {
    assert.equal(byName.get(name)?.team, team, `${name} keeps its team's name`);
    assert.equal(byName.get(name)?.team_id, id, `${name}'s team id`);
  }
  // Still written and read back after it.
  const moved = { ...byName.get("no-team")!, team: "research", team_id: "tm_00000000000000000000000a" };
  await db.tokens.put({ ...moved, updated_at: T(6) }, makeAudit(moved));
  assert.equal((await db.tokens.loadAll()).tokens.find((t) => t.id === moved.id)?.team_id, moved.team_id);
}

Deno.test("token team id migration: SQLite schema 15 → 17 gives each token its team's id", async () => {
  await migrateSqlite({
    from: 15,
    rows: oldRows((b) => (b ? "1" : "0")),
    check: assertMigrated,
    openers: [SQLITE_OPENERS[0]],
    inspect: (file) => assert.deepEqual(sqliteColumn(file, "tokens", "team_id").slice(0, 2), ["TEXT", 0]),
  });
});

Deno.test("token team id migration: PostgreSQL schema 14 → 16 gives each token its team's id", async (t) => {
  await migratePostgres(t, { from: 14, rows: oldRows((b) => String(b)), check: assertMigrated });
});
