/**
 * The migration that gives issued tokens their team's identity (SQLite schema 17, PostgreSQL schema 16): a
 * `team_id` beside the `team` name, which is what a token's membership is resolved by from then on.
 *
 * Before it, a token named its team only, and membership was looked up by that name on every load. A team's
 * name is free again once the team leaves (deleted here, or removed from the config file), so a team made later
 * under the name silently took in the old tokens: its limits, budget and model scope applied to them, they were
 * listed among its members, and they blocked its delete. Usage records had the same defect and were fixed by
 * `lib/usage/team_identity_migration.ts`; this is the tokens' half.
 *
 * Existing tokens are given the id of the team that has their team's name **at migration time**: the stored
 * team of that name that is not deleted, else the config file's team of that name (`team_<name>`, which the
 * database cannot see; a name no team has any more thus keeps the config identity, and a team made later here
 * under the name gets a `tm_…` id and does not take the token in). A revoked token gets the team whose life
 * covered its revocation, so its history reads right. What the migration cannot undo is a token that had
 * already been taken in by a newer team of its name before the upgrade: it stays in that team (as it was being
 * served), and an operator who wants it out PATCHes its `team`.
 *
 * Additive: a column, filled once; `team` is kept as it was. Times compare as text (canonical ISO, as the
 * gateway writes every time). Statements only, no imports, so both schema modules can list it.
 *
 * @module
 */

/** The identity prefix of config teams (`teamId` in lib/config/types.ts), as SQL text. */
const CONFIG_TEAM = "'team_'";

/**
 * The stored team named `tokens.team` that holds the token: for a live token the one not deleted, for a
 * revoked one the one whose life covers the revocation. NULL when there is none (a config team's name).
 */
const HOLDER = `(SELECT t.id FROM teams t WHERE t.name = tokens.team
       AND ((tokens.revoked_at IS NULL AND t.deleted_at IS NULL)
         OR (tokens.revoked_at IS NOT NULL AND t.created_at <= tokens.revoked_at
           AND (t.deleted_at IS NULL OR t.deleted_at > tokens.revoked_at)))
     ORDER BY t.created_at DESC LIMIT 1)`;

/** The backfill of the tokens written before it; tokens of no team keep NULL. */
const BACKFILL = `UPDATE tokens SET team_id = COALESCE(${HOLDER}, ${CONFIG_TEAM} || tokens.team)
     WHERE tokens.team IS NOT NULL`;

/** Serves a team delete's member check (`team_id = ?` among live tokens); keeps no entries for no team. */
const INDEX = "CREATE INDEX tokens_team_id ON tokens (team_id) WHERE team_id IS NOT NULL";

/** SQLite schema 17 (one script, run in the migration's transaction). */
export const SQLITE_TOKENS_TEAM_ID_SQL = `ALTER TABLE tokens ADD COLUMN team_id TEXT;
     ${BACKFILL};
     ${INDEX};`;

/** PostgreSQL schema 16 (statements run in the migration's transaction). */
export const POSTGRES_TOKENS_TEAM_ID_MIGRATION: readonly string[] = [
  "ALTER TABLE tokens ADD COLUMN team_id text",
  BACKFILL,
  INDEX,
];
