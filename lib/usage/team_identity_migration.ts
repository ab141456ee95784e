/**
 * The migration that gives usage records their team's identity (SQLite schema 15, PostgreSQL schema 14): a
 * `team_id` beside the `team` name, which is what a team's budget is seeded by and `team_id=` finds.
 *
 * Before it, a team's spend was summed by name, and a team's name is free again once the team is deleted
 * through the admin API: a team declared in the file, or made again, under that name inherited what the deleted
 * one had spent, and per-team totals mixed the two. Existing records are attributed to the team that had the
 * name **when the record was written**: the team made through the admin API whose life (created, and not yet
 * deleted) covers the record's time, or else the config file's team of that name (`team_<name>`). The one case
 * a database cannot tell is a stored team shadowed by a config team of the same name at the time (added to the
 * file later; the file's was served); its records go to the stored team, as the ownership migration
 * (`ownership_migration.ts`) decided for tokens. Records of no team keep NULL.
 *
 * Additive: a column and an index; `team` is kept as it was. Times compare as text (canonical ISO, as the
 * gateway writes every time). Statements only, no imports, so both schema modules can list it.
 *
 * @module
 */

/** The identity prefix of config teams (`teamId` in lib/config/types.ts), as SQL text. */
const CONFIG_TEAM = "'team_'";

/** The id of the stored team named `usage.team` whose life covers `usage.time`, or NULL. */
const HOLDER = `(SELECT t.id FROM teams t WHERE t.name = usage.team AND t.created_at <= usage.time
       AND (t.deleted_at IS NULL OR t.deleted_at > usage.time)
     ORDER BY t.created_at DESC LIMIT 1)`;

/** The backfill of the records written before it. */
const BACKFILL = `UPDATE usage SET team_id = COALESCE(${HOLDER}, ${CONFIG_TEAM} || usage.team)
     WHERE usage.team IS NOT NULL`;

/** Serves `team_id=` and the budget seed (with time); keeps no entries for records of no team. */
const INDEX = "CREATE INDEX usage_team_id_time ON usage (team_id, time) WHERE team_id IS NOT NULL";

/** SQLite schema 15 (one script, run in the migration's transaction). */
export const SQLITE_TEAM_IDENTITY_SQL = `ALTER TABLE usage ADD COLUMN team_id TEXT;
     ${BACKFILL};
     ${INDEX};`;

/** PostgreSQL schema 14 (statements run in the migration's transaction). */
export const POSTGRES_TEAM_IDENTITY_MIGRATION: readonly string[] = [
  "ALTER TABLE usage ADD COLUMN team_id text",
  BACKFILL,
  INDEX,
];
