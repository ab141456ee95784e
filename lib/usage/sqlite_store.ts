/**
 * The embedded default usage store: one SQLite file through `node:sqlite` (`DatabaseSync`, in Deno and Bun),
 * in WAL mode so admin queries read while the pipeline writes. One column per `UsageRecord` field (booleans
 * as 0/1; `denials` is not stored, it is derived from `outcome` and `rule`), a `uid` column with a UNIQUE
 * index so replays are idempotent, and one index per admin filter paired with time.
 *
 * The calls are synchronous underneath (a batch insert costs about 10-20 µs per row, mostly index updates and
 * WAL writes), so the server runs this store in a worker thread (`sqlite_worker_store.ts`) and the request
 * thread only posts batches to it.
 *
 * @module
 */
import { setImmediate } from "node:timers";
import { dirname } from "node:path";
import { makeDirectoriesSync } from "./make_directories.ts";
import { sqliteFileOf } from "./sqlite_file_name.ts";
import { DatabaseSync } from "node:sqlite";
import { rollback, run } from "./sqlite_calls.ts";
import { storableText } from "./client_text.ts";
import {
  boundedGuardrails,
  type ColumnKind,
  COST_CLASS_COLUMNS_V10,
  type RecordListQuery,
  type RecordPage,
  USAGE_COLUMNS,
  USAGE_COLUMNS_V1,
  type UsageQuery,
  type UsageReport,
} from "./record.ts";
import { batchLimit, canonicalTime, runUsageQuery, spendOf, spendSql, type SqlValue } from "./query.ts";
import { registerSqliteFunctions, SQLITE_DIALECT } from "./sql_dialect.ts";
import { runListRecords } from "./record_list.ts";
import { SQLITE_USAGE_INDEXES } from "./usage_indexes.ts";
import { type StoredUsageRecord, uidOf, type UsageDatabase } from "./store.ts";
import {
  createSqliteResponsesStore,
  RESPONSE_ITEMS_SQL,
  RESPONSES_TABLE_SQL,
} from "./responses_store_sqlite.ts";
import {
  createSqliteTokenStore,
  SQLITE_TEAMS_SQL,
  SQLITE_TOKENS_CACHE_SQL,
  SQLITE_TOKENS_GUARDRAILS_SQL,
  SQLITE_TOKENS_SQL,
  SQLITE_TOKENS_TEAM_SQL,
} from "../tokens/store_sqlite.ts";
import { SQLITE_OWNERSHIP_SQL } from "./ownership_migration.ts";
import { SQLITE_TEAM_IDENTITY_SQL } from "./team_identity_migration.ts";
import { SQLITE_TOKENS_TEAM_ID_SQL } from "../tokens/team_id_migration.ts";

/**
 * The schema version this code writes; older databases are migrated, newer ones refused. 1: usage records;
 * 2: stored responses (`responses_store_sqlite.ts`); 3: their item index (`item_reference` lookups) and
 * `upstream_id`; 4: tokens issued through the admin API, their secrets' hashes and the audit trail
 * (`lib/tokens/store_sqlite.ts`); 5: per-token data by the token's identity, not its name (stored responses'
 * `owner`, usage records' `token_id`: `ownership_migration.ts`); 6: usage records' `dropped` (what a translated
 * target did not get of the request); 7: usage records' `cache`, `saved_tokens` and `saved_cost` (the response
 * cache's outcome and what a hit saved); 8: tokens' `cache` (an issued token's response-cache settings); 9:
 * usage records' `trace_id` (the request's OpenTelemetry trace); 10: usage records' `cost_input`, `cost_cached`,
 * `cost_cache_write`, `cost_output` and `cost_reasoning` (the cost by token class); 11: tokens' `team` and
 * `end_user_limits`, and usage records' `team` (the team of the request's token); 12: teams made through the
 * admin API (`teams`, `lib/tokens/store_sqlite.ts`); 13: usage records' `guardrails` (what the guardrails did to
 * the request, as JSON text); 14: tokens' `guardrails` (the names of the guardrails attached to an issued token);
 * 15: usage records' `team_id` (the identity of the request's token's team: `team_identity_migration.ts`); 16:
 * usage records' `cost_web_search` (what the web searches the upstream ran cost); 17: tokens' `team_id`
 * (membership by the team's identity, not its reusable name: `lib/tokens/team_id_migration.ts`).
 */
export const USAGE_SCHEMA_VERSION = 17;

const SQL_TYPE: Record<ColumnKind, string> = {
  "text": "TEXT NOT NULL",
  "text?": "TEXT",
  "int": "INTEGER NOT NULL",
  "real": "REAL NOT NULL",
  "real?": "REAL",
  "bool": "INTEGER NOT NULL",
  "json?": "TEXT",
};

/** Migrations by the version they produce; each runs once, in order, in a transaction. */
export const SQLITE_MIGRATIONS: readonly (readonly [number, string])[] = [
  [
    1,
    `CREATE TABLE usage (
       uid TEXT NOT NULL,
       ${
      USAGE_COLUMNS.slice(0, USAGE_COLUMNS_V1).map(([name, kind]) => `${name} ${SQL_TYPE[kind]}`).join(
        ",\n       ",
      )
    }
     );
     CREATE UNIQUE INDEX usage_uid ON usage (uid);
     CREATE INDEX usage_time ON usage (time);
     CREATE INDEX usage_token_time ON usage (token, time);
     CREATE INDEX usage_alias_time ON usage (alias, time);
     CREATE INDEX usage_provider_time ON usage (provider, time);
     CREATE INDEX usage_environment_time ON usage (environment, time);
     CREATE INDEX usage_outcome_time ON usage (outcome, time);`,
  ],
  [2, RESPONSES_TABLE_SQL],
  [3, RESPONSE_ITEMS_SQL],
  [4, SQLITE_TOKENS_SQL],
  [5, SQLITE_OWNERSHIP_SQL],
  [6, "ALTER TABLE usage ADD COLUMN dropped TEXT;"],
  // Defaults, not NULLs: a record from before caching saved nothing, and the sums stay plain SUMs.
  [
    7,
    `ALTER TABLE usage ADD COLUMN cache TEXT;
     ALTER TABLE usage ADD COLUMN saved_tokens INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE usage ADD COLUMN saved_cost REAL NOT NULL DEFAULT 0;`,
  ],
  [8, SQLITE_TOKENS_CACHE_SQL],
  [9, "ALTER TABLE usage ADD COLUMN trace_id TEXT;"],
  // Defaults, as for migration 7: a record from before the split reads as none, and the sums stay plain SUMs.
  [
    10,
    COST_CLASS_COLUMNS_V10.map((c) => `ALTER TABLE usage ADD COLUMN ${c} REAL NOT NULL DEFAULT 0;`).join(
      "\n",
    ),
  ],
  // NULL for the records and tokens from before teams (none). The index serves `team=` (with time), and keeps
  // no entries for records of no team.
  [
    11,
    `${SQLITE_TOKENS_TEAM_SQL}
     ALTER TABLE usage ADD COLUMN team TEXT;
     CREATE INDEX usage_team_time ON usage (team, time) WHERE team IS NOT NULL;`,
  ],
  // A table of its own: tokens and records keep naming teams by name, as before.
  [12, SQLITE_TEAMS_SQL],
  // NULL for the records from before guardrails (none applied). No index: the request log's `guardrail=`
  // filter reads the records of a time range, as `rule=` does.
  [13, "ALTER TABLE usage ADD COLUMN guardrails TEXT;"],
  // NULL for the tokens stored before it (no guardrails of their own).
  [14, SQLITE_TOKENS_GUARDRAILS_SQL],
  // The records with a team get the identity of the team that had its name then; the others keep NULL.
  [15, SQLITE_TEAM_IDENTITY_SQL],
  // A default, as for migration 10: a record from before it priced no search.
  [16, "ALTER TABLE usage ADD COLUMN cost_web_search REAL NOT NULL DEFAULT 0;"],
  // Tokens with a team get the id of the team that has its name now; the others keep NULL.
  [17, SQLITE_TOKENS_TEAM_ID_SQL],
];

/**
 * Rows per transaction when the store runs on the request thread: small enough that one slice blocks the
 * event loop for well under a millisecond.
 */
const INSERT_SLICE = 32;

/**
 * Rows per INSERT statement. A call into SQLite per row (35-odd bound values, a step and a reset) cost more
 * than the rows' index updates: in 500-row transactions of real records, 23–36 µs of CPU per row one row per
 * statement against 15–21 µs with 25 (node:sqlite on Deno and Bun alike; 50 and 100 were no better). The
 * variables per statement stay far below SQLite's limit (32,766).
 */
const ROWS_PER_STATEMENT = 25;

/** Options for {@linkcode createSqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * Rows per insert transaction (default 32). Every commit writes the touched pages of the table and its seven
   * indexes to the WAL, so larger transactions cost about half as much per row; the store's worker thread
   * (`sqlite_worker.ts`), which blocks no requests, uses whole batches.
   */
  rowsPerTransaction?: number;
}

/**
 * Opens (creating it and its parent directories if needed) the SQLite usage store at `path` (a path, or a SQLite
 * URI: `sqlite_file_name.ts`); `:memory:` gives a private in-memory database for tests. Throws when the file
 * cannot be opened or was written by a newer schema version. The calls run on the calling thread; the server uses
 * it from a worker (`openSqliteWorkerStore`). Its `responses` are the stored responses in the same file.
 */
export function createSqliteStore(path: string, options: SqliteStoreOptions = {}): UsageDatabase {
  const slice = Math.max(1, options.rowsPerTransaction ?? INSERT_SLICE);
  // The directory of the file the name opens (a SQLite URI's path too), as the location check expects.
  const file = sqliteFileOf(path);
  if (file.kind === "file" && !file.mustExist) makeDirectoriesSync(dirname(file.path));
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;");
    migrate(db);
    db.exec(SQLITE_USAGE_INDEXES);
    registerSqliteFunctions(db);
  } catch (e) {
    db.close();
    throw e;
  }

  const insertInto = `INSERT OR IGNORE INTO usage (uid, ${USAGE_COLUMNS.map(([n]) => n).join(", ")}) VALUES`;
  const placeholders = `(?, ${USAGE_COLUMNS.map(() => "?").join(", ")})`;
  const insertStmt = db.prepare(`${insertInto} ${placeholders}`);
  const insertManyStmt = db.prepare(
    `${insertInto} ${Array(ROWS_PER_STATEMENT).fill(placeholders).join(", ")}`,
  );
  /** Inserts `records[start, end)`: whole statements of {@linkcode ROWS_PER_STATEMENT} rows, then one by one. */
  const insertRows = (records: readonly StoredUsageRecord[], start: number, end: number) => {
    let i = start;
    for (; i + ROWS_PER_STATEMENT <= end; i += ROWS_PER_STATEMENT) {
      const values: SqlValue[] = [];
      for (let j = i; j < i + ROWS_PER_STATEMENT; j++) for (const v of usageRow(records[j])) values.push(v);
      insertManyStmt.run(...values);
    }
    for (; i < end; i++) insertStmt.run(...usageRow(records[i]));
  };
  const sumStmt = db.prepare(spendSql("token_id", SQLITE_DIALECT));
  const teamSumStmt = db.prepare(spendSql("team_id", SQLITE_DIALECT));
  const deleteStmt = db.prepare(
    "DELETE FROM usage WHERE rowid IN (SELECT rowid FROM usage WHERE time < ? LIMIT ?)",
  );
  let closed = false;
  const open = () => {
    if (closed) throw new Error("usage store is closed");
  };
  /** What the records `stmt` selects (by token or by team) spent since `sinceIso`: a budget's seed. */
  const spendSince = (stmt: typeof sumStmt, value: string, sinceIso: string) =>
    run(() => {
      open();
      return spendOf(
        stmt.get(value, canonicalTime(sinceIso, "since")) as Record<string, unknown> | undefined,
      );
    });

  return {
    responses: createSqliteResponsesStore(db, open),
    tokens: createSqliteTokenStore(db, open),
    async insert(records) {
      // node:sqlite is synchronous: on the request thread a 500-row batch would hold the event loop for
      // 10-20 ms. Slices of `slice` rows, each its own transaction, with a macrotask between them, keep every
      // pause short. A failure part-way is safe: rows are de-duplicated by uid, so a retry inserts the rest.
      for (let start = 0; start < records.length; start += slice) {
        if (start > 0) await new Promise((resolve) => setImmediate(resolve));
        await run(() => {
          open();
          db.exec("BEGIN IMMEDIATE");
          try {
            insertRows(records, start, Math.min(records.length, start + slice));
            db.exec("COMMIT");
          } catch (e) {
            rollback(db);
            throw e;
          }
        });
      }
      if (records.length === 0) await run(open);
    },
    query(q: UsageQuery): Promise<UsageReport> {
      return run(() => {
        open();
        return runUsageQuery(q, (sql, params) => db.prepare(sql).all(...params) as Record<string, unknown>[]);
      });
    },
    listRecords(q: RecordListQuery): Promise<RecordPage> {
      return run(() => {
        open();
        const all = (sql: string, params: readonly SqlValue[]) =>
          db.prepare(sql).all(...params) as Record<string, unknown>[];
        return runListRecords(q, all);
      });
    },
    sumSince: (tokenId, sinceIso) => spendSince(sumStmt, tokenId, sinceIso),
    sumTeamSince: (teamId, sinceIso) => spendSince(teamSumStmt, teamId, sinceIso),
    deleteOlderThan(iso, limit) {
      return run(() => {
        open();
        return Number(deleteStmt.run(canonicalTime(iso, "before"), batchLimit(limit)).changes);
      });
    },
    close() {
      return run(() => {
        if (closed) return;
        closed = true;
        db.close();
      });
    },
  };
}

function migrate(db: DatabaseSync): void {
  db.exec("CREATE TABLE IF NOT EXISTS usage_schema (version INTEGER NOT NULL)");
  const row = db.prepare("SELECT MAX(version) AS version FROM usage_schema").get() as
    | Record<string, unknown>
    | undefined;
  const current = Number(row?.version ?? 0);
  if (current > USAGE_SCHEMA_VERSION) {
    throw new Error(
      `usage database schema version ${current} is newer than this gateway's (${USAGE_SCHEMA_VERSION})`,
    );
  }
  for (const [version, sql] of SQLITE_MIGRATIONS) {
    if (version <= current) continue;
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(sql);
      db.prepare("DELETE FROM usage_schema").run();
      db.prepare("INSERT INTO usage_schema (version) VALUES (?)").run(version);
      db.exec("COMMIT");
    } catch (e) {
      rollback(db);
      throw e;
    }
  }
}

/**
 * A record's column values. Values are coerced to their column's type (a NaN latency becomes 0, a missing
 * text `""`, an integer kept within ±`Number.MAX_SAFE_INTEGER`, well inside PostgreSQL's `bigint`) so that one
 * malformed record cannot fail its batch again and again and stall the pipeline for every tenant. (Token counts
 * are checked where they are read from the upstream, lib/openai/usage_counts.ts; this is the last line.)
 */
export function usageRow(record: StoredUsageRecord): SqlValue[] {
  const row: SqlValue[] = [uidOf(record)];
  for (const [name, kind] of USAGE_COLUMNS) {
    const v: unknown = record[name];
    switch (kind) {
      case "text":
        row.push(name === "time" ? timeOf(v) : v == null ? "" : textOf(v));
        break;
      case "text?":
        row.push(v == null ? null : textOf(v));
        break;
      case "int":
        row.push(typeof v === "number" && Number.isFinite(v) ? clampInteger(v) : 0);
        break;
      case "real":
        row.push(typeof v === "number" && Number.isFinite(v) ? v : 0);
        break;
      case "real?":
        row.push(typeof v === "number" && Number.isFinite(v) ? v : null);
        break;
      case "bool":
        row.push(v ? 1 : 0);
        break;
      case "json?":
        row.push(jsonOf(name, v));
        break;
    }
  }
  return row;
}

/** A JSON column's value as text (null when it holds nothing); only `guardrails` is one, kept bounded. */
function jsonOf(name: string, v: unknown): string | null {
  const value = name === "guardrails" ? boundedGuardrails(v) : v;
  if (value == null) return null;
  try {
    return JSON.stringify(value) ?? null;
  } catch {
    return null; // a cycle or a BigInt: not worth failing the batch for
  }
}

/** A text column's value, as both databases can hold it (`storableText`: no NUL, no lone surrogate). */
function textOf(v: unknown): string {
  if (typeof v === "string") return storableText(v);
  try {
    return storableText(String(v));
  } catch {
    return ""; // a Symbol or a throwing toString: not worth failing the batch for
  }
}

/** Times are kept in `toISOString()` form so that string comparison and `strftime` work; kept as-is if unparsable. */
function timeOf(v: unknown): string {
  if (typeof v !== "string") return new Date(0).toISOString();
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? v : new Date(ms).toISOString();
}

/** `v` as an integer within ±`Number.MAX_SAFE_INTEGER`: exact in JavaScript, and in range for any integer column. */
function clampInteger(v: number): number {
  return Math.max(-Number.MAX_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, Math.trunc(v)));
}
