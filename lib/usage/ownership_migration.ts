/**
 * The migration that moves per-token data from the token's name to its identity (SQLite schema 5, PostgreSQL
 * schema 4): stored responses and their item index get an `owner` (the `token` column renamed), and usage
 * records a `token_id` (what budgets are seeded by).
 *
 * Before it, a revoked token's name, reissued to a new token, brought the old token's stored responses with it.
 * Existing rows are attributed to the token that held the name **when the row was written**: the token issued
 * through the admin API whose life (created, and not yet revoked) covers the row's time, or else the config
 * file's token of that name (`cfg_<name>`). So a response written by a token that was revoked before a new one
 * took its name stays with the revoked token (reachable by nobody), while the live holder keeps its own. The
 * one case a database cannot tell is a stored token shadowed by a config token of the same name at the time;
 * its rows go to the stored token, which had the name in the token table then.
 *
 * Times compare as text: the gateway writes every time as canonical ISO (`toISOString()`), whose string order
 * is time order; a response's `created_at` (Unix seconds) is formatted the same way for the comparison.
 * Statements only, no imports, so both schema modules can list it.
 *
 * @module
 */

/** The identity prefix of config tokens (`configTokenId` in lib/config/types.ts), as SQL text. */
const CFG = "'cfg_'";

/** The id of the stored token named `name` whose life covers `at` (both SQL expressions), or NULL. */
function holderAt(name: string, at: string): string {
  return `(SELECT t.id FROM tokens t WHERE t.name = ${name} AND t.created_at <= ${at}
       AND (t.revoked_at IS NULL OR t.revoked_at > ${at})
     ORDER BY t.created_at DESC LIMIT 1)`;
}

/** SQLite schema 5 (one script, run in the migration's transaction). */
export const SQLITE_OWNERSHIP_SQL = `ALTER TABLE responses RENAME COLUMN token TO owner;
     ALTER TABLE response_items RENAME COLUMN token TO owner;
     UPDATE responses SET owner = COALESCE(
       ${holderAt("responses.owner", "strftime('%Y-%m-%dT%H:%M:%fZ', responses.created_at, 'unixepoch')")},
       ${CFG} || responses.owner);
     UPDATE response_items SET owner = (SELECT r.owner FROM responses r WHERE r.id = response_items.response_id);
     DELETE FROM response_items WHERE owner IS NULL;
     ALTER TABLE usage ADD COLUMN token_id TEXT;
     UPDATE usage SET token_id = COALESCE(${holderAt("usage.token", "usage.time")}, ${CFG} || usage.token)
       WHERE usage.token IS NOT NULL;
     CREATE INDEX usage_token_id_time ON usage (token_id, time);`;

/** PostgreSQL schema 4 (statements run in the migration's transaction). */
export const POSTGRES_OWNERSHIP_MIGRATION: readonly string[] = [
  "ALTER TABLE responses RENAME COLUMN token TO owner",
  "ALTER TABLE response_items RENAME COLUMN token TO owner",
  `UPDATE responses SET owner = COALESCE(
     ${
    holderAt(
      "responses.owner",
      `to_char(to_timestamp(responses.created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    )
  },
     ${CFG} || responses.owner)`,
  `UPDATE response_items i SET owner = r.owner FROM responses r WHERE r.id = i.response_id`,
  "ALTER TABLE usage ADD COLUMN token_id text",
  `UPDATE usage SET token_id = COALESCE(${holderAt("usage.token", "usage.time")}, ${CFG} || usage.token)
     WHERE usage.token IS NOT NULL`,
  "CREATE INDEX usage_token_id_time ON usage (token_id, time)",
];
