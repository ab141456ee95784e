/**
 * The usage store of a fleet: usage records (and, through `responses`, stored responses) in PostgreSQL,
 * shared by every replica, behind the same `UsageStore` interface as the embedded SQLite store.
 *
 * - Inserts take the pipeline's batches (the pipeline already keeps them off the request path, retries with
 *   backoff and spills past its bound), as multi-row `INSERT … ON CONFLICT (uid) DO NOTHING`: a replayed or
 *   retried record is ignored, so a batch that committed but whose answer was lost is safe to send again.
 * - `/admin/usage` runs the shared query (`query.ts`) in PostgreSQL's dialect, so both stores answer alike.
 * - Every call has a time limit (`timeoutMs`): a database that hangs fails the call, and the pipeline treats
 *   it as down (records queue, then spill) rather than waiting.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { RecordListQuery, RecordPage, UsageQuery, UsageReport } from "./record.ts";
import { runListRecordsAsync } from "./record_list.ts";
import {
  batchLimit,
  canonicalTime,
  runUsageQueryAsync,
  spendOf,
  spendSql,
  type SqlValue,
  UsageQueryError,
} from "./query.ts";
import { POSTGRES_DIALECT } from "./sql_dialect.ts";
import {
  isConnectionFailure,
  migratePostgres,
  migrationTimeoutMs,
  type PostgresClient,
  type PostgresOptions,
  PostgresPool,
  refusedMigration,
  SchemaTooNewError,
  withTimeout,
} from "./postgres_schema.ts";
import { createPostgresResponsesStore } from "./responses_store_postgres.ts";
import { createPostgresTokenStore } from "../tokens/store_postgres.ts";
import { USAGE_COLUMNS } from "./record.ts";
import { usageRow } from "./sqlite_store.ts";
import type { UsageDatabase } from "./store.ts";
import type { StoreBreakerOptions } from "../timers/store_breaker.ts";

/**
 * Rows per INSERT statement: PostgreSQL takes at most 65 535 parameters per statement, and a record has 34
 * columns (its uid included); a pipeline batch larger than this is sent as several statements (each
 * idempotent on its own).
 */
const ROWS_PER_STATEMENT = 1_000;

/**
 * What calls still running at `close()` get before their connections are ended, in seconds. The gateway closes
 * the store after the usage pipeline, whose records are stored or spilled by then: what can be left are reads
 * (a token version check, a budget seed) that a hung database would otherwise hold for a whole call's time,
 * past the platform's kill.
 */
const CLOSE_GRACE_S = 0.5;

const COLUMN_NAMES = ["uid", ...USAGE_COLUMNS.map(([name]) => name)];
/** Where the booleans are in a row of `usageRow` (which gives them as 0/1, SQLite's form). */
const BOOL_AT = new Set(USAGE_COLUMNS.flatMap(([, kind], i) => kind === "bool" ? [i + 1] : []));
/** Where the JSON columns are in a row of `usageRow` (which gives them as text): cast to `json` in the INSERT. */
const JSON_AT = new Set(USAGE_COLUMNS.flatMap(([, kind], i) => kind === "json?" ? [i + 1] : []));

/** `text` with its `?` placeholders numbered as PostgreSQL's `$1…` (the shared query is written with `?`). */
export function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

/** A failed admin read: a bad filter stays the admin's 400; a database that is down is a 503 to retry, not a 500. */
function readFailure(err: unknown): Error {
  if (err instanceof UsageQueryError) return err;
  return new GatewayError(503, "The usage database is unavailable right now. Please try again shortly.", {
    type: "server_error",
    code: "usage_store_unavailable",
    headers: { "retry-after": "2" },
    cause: err,
  });
}

/** Options for {@linkcode openPostgresStore}. */
export interface OpenPostgresOptions extends PostgresOptions {
  /**
   * Called when the database cannot be reached at start; the store is then returned anyway and migrates on
   * its first call that reaches the database (until then its calls reject, and the pipeline queues and
   * spills). Without it, such a start rejects.
   */
  onUnreachable?: (err: unknown) => void;
  /**
   * How stored responses' calls try a database that failed: one per interval (`timers/store_breaker.ts`);
   * tests give a clock. Default: the counters' interval and the clock.
   */
  responsesProbe?: StoreBreakerOptions;
}

/**
 * Connects to PostgreSQL, migrates the schema (under the migration lock) and returns the store. Rejects when
 * the schema is newer than this code's, when the database refuses the migration (`MigrationRefusedError`: a
 * privilege the role lacks), and (without `onUnreachable`) when the database cannot be reached.
 */
export async function openPostgresStore(options: OpenPostgresOptions): Promise<UsageDatabase> {
  const pool = new PostgresPool(options);
  const timeoutMs = options.timeoutMs ?? 5_000;
  let migrated: Promise<void> | null = null;
  const migrationMs = migrationTimeoutMs(timeoutMs);
  // Memoized while it succeeds or runs; a failure clears it, so the next call tries again.
  const ensureSchema = () =>
    migrated ??= withTimeout(migratePostgres(pool.sql, options.schema, migrationMs), migrationMs, "migration")
      .catch((err) => {
        migrated = null;
        throw err;
      });
  try {
    await ensureSchema();
  } catch (err) {
    // Refused for good (a privilege the role lacks): stop here, rather than serve as if the database were down.
    const refused = refusedMigration(err, options.schema);
    if (refused || err instanceof SchemaTooNewError || options.onUnreachable === undefined) {
      await pool.end(1).catch(() => {});
      throw refused ?? err;
    }
    options.onUnreachable(err);
  }
  return createPostgresStore(pool, timeoutMs, ensureSchema, options.responsesProbe);
}

/**
 * The store over a pool (replaced after a failed call); `ensureSchema` (default: nothing) runs before each
 * call, for a store opened while the database was down; `responsesProbe` as {@linkcode OpenPostgresOptions}'s.
 * `close()` ends the pool.
 */
export function createPostgresStore(
  pool: PostgresPool,
  timeoutMs: number,
  ensureSchema: () => Promise<void> = () => Promise.resolve(),
  responsesProbe?: StoreBreakerOptions,
): UsageDatabase {
  let closed = false;
  const call = async <T>(what: string, fn: (sql: PostgresClient) => Promise<T>): Promise<T> => {
    if (closed) throw new Error("usage store is closed");
    try {
      await ensureSchema();
      return await withTimeout(fn(pool.sql), timeoutMs, what);
    } catch (err) {
      // After a failed connection the pool starts afresh: a connection the failure touched may be left waiting
      // on a socket the server is gone from (seen when PostgreSQL crashes mid-query), and calls queued behind
      // it would wait forever. A bad query (`UsageQueryError`), a taken token name or any other error the
      // server reports about the statement is the caller's, not the connection's.
      if (!closed && !(err instanceof UsageQueryError) && isConnectionFailure(err)) pool.reset();
      throw err;
    }
  };

  /** What the records whose `column` is `value` spent since `sinceIso`: a token's or a team's budget seed. */
  const spendSince = (column: "token_id" | "team_id", value: string, sinceIso: string) =>
    call("budget sum", async (sql) => {
      const [row] = await sql.unsafe(numbered(spendSql(column, POSTGRES_DIALECT)), [
        value,
        canonicalTime(sinceIso, "since"),
      ]);
      return spendOf(row);
    });

  const tokens = createPostgresTokenStore(call, {
    url: pool.options.url,
    schema: pool.options.schema,
    timeoutMs,
  });

  return {
    responses: createPostgresResponsesStore(call, responsesProbe),
    tokens,
    insert(records) {
      return call("insert", async (sql) => {
        for (let start = 0; start < records.length; start += ROWS_PER_STATEMENT) {
          const slice = records.slice(start, start + ROWS_PER_STATEMENT);
          const params: (SqlValue | boolean)[] = [];
          const tuples: string[] = [];
          for (const record of slice) {
            const row = usageRow(record);
            const at = params.length;
            row.forEach((v, i) => params.push(BOOL_AT.has(i) ? v === 1 : v));
            tuples.push(
              `(${
                row.map((_, i) => JSON_AT.has(i) ? `$${at + i + 1}::text::json` : `$${at + i + 1}`).join(", ")
              })`,
            );
          }
          // Unprepared: the text differs with the batch's size, and a cache of one plan per size is waste.
          await sql.unsafe(
            `INSERT INTO usage (${COLUMN_NAMES.join(", ")}) VALUES ${tuples.join(", ")}
             ON CONFLICT (uid) DO NOTHING`,
            params,
            { prepare: false },
          );
        }
      });
    },
    async query(q: UsageQuery): Promise<UsageReport> {
      try {
        return await call("usage query", (sql) =>
          runUsageQueryAsync(
            q,
            async (text, params) => [...await sql.unsafe(numbered(text), [...params])],
            POSTGRES_DIALECT,
          ));
      } catch (err) {
        throw readFailure(err);
      }
    },
    async listRecords(q: RecordListQuery): Promise<RecordPage> {
      try {
        return await call("request log", (sql) =>
          runListRecordsAsync(
            q,
            async (text, params) => [...await sql.unsafe(numbered(text), [...params])],
            POSTGRES_DIALECT,
          ));
      } catch (err) {
        throw readFailure(err);
      }
    },
    sumSince: (tokenId, sinceIso) => spendSince("token_id", tokenId, sinceIso),
    sumTeamSince: (teamId, sinceIso) => spendSince("team_id", teamId, sinceIso),
    deleteOlderThan(iso, limit) {
      return call("retention", async (sql) => {
        const result = await sql.unsafe(
          "DELETE FROM usage WHERE ctid IN (SELECT ctid FROM usage WHERE time < $1 LIMIT $2)",
          [canonicalTime(iso, "before"), batchLimit(limit)],
        );
        return result.count;
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([tokens.close(), pool.end(CLOSE_GRACE_S)]);
    },
  };
}
