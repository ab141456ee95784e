/**
 * Indexes of the `usage` table for the admin console's reads, beyond those of the schema's first version.
 * They are created at open with `IF NOT EXISTS` (no schema version of their own), so an older database gains
 * them on its next start and a newer gateway's extra indexes never make an older one refuse the file. On a
 * month of records (~300k) building them takes about a second, once.
 *
 * - `usage_time_uid`: the request log's order (time DESC, uid DESC) and its keyset cursor, so a page costs the
 *   page. In PostgreSQL uid is compared bytewise (`COLLATE "C"`), as in SQLite, so both page alike.
 * - `usage_upstream_model_time`: the upstream model filter (drill-down from the overview), paired with time
 *   like every other filter column.
 * - `usage_trace_id`: the request log's `trace_id` filter (from a trace to its request), which would
 *   otherwise walk the whole table for a trace it does not find. Partial, so a gateway without telemetry
 *   (every `trace_id` NULL) keeps no entries in it.
 *
 * @module
 */

/** SQLite: one script, run at every open. */
export const SQLITE_USAGE_INDEXES = `
  CREATE INDEX IF NOT EXISTS usage_time_uid ON usage (time, uid);
  CREATE INDEX IF NOT EXISTS usage_upstream_model_time ON usage (upstream_model, time);
  CREATE INDEX IF NOT EXISTS usage_trace_id ON usage (trace_id) WHERE trace_id IS NOT NULL;
`;

/** PostgreSQL: statements run at open, inside the migration transaction (under its lock). */
export const POSTGRES_USAGE_INDEXES: readonly string[] = [
  `CREATE INDEX IF NOT EXISTS usage_time_uid ON usage (time, uid COLLATE "C")`,
  "CREATE INDEX IF NOT EXISTS usage_upstream_model_time ON usage (upstream_model, time)",
  "CREATE INDEX IF NOT EXISTS usage_trace_id ON usage (trace_id) WHERE trace_id IS NOT NULL",
];
