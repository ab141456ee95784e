/**
 * The PostgreSQL database of a fleet (`postgres:` in the config): the connection pool and the schema
 * migrations that run at start-up.
 *
 * Every table lives in the configured schema, which is the connection's whole `search_path`, so the SQL of
 * the stores names tables unqualified (the usage query is shared with SQLite) and never reaches `public`.
 *
 * Several replicas may start at once against an empty database: each migrates inside one transaction that
 * first takes a transaction-level advisory lock (keyed by the schema name), so one of them creates the schema
 * and the others wait, then find it current. DDL is transactional in PostgreSQL, so a failed migration leaves
 * nothing half-made. A schema newer than this code knows is refused, as the SQLite store does.
 *
 * @module
 */
import postgres from "postgres";
import { type ColumnKind, COST_CLASS_COLUMNS_V10, USAGE_COLUMNS, USAGE_COLUMNS_V1 } from "./record.ts";
import { POSTGRES_USAGE_INDEXES } from "./usage_indexes.ts";
import { POSTGRES_OWNERSHIP_MIGRATION } from "./ownership_migration.ts";
import { POSTGRES_TEAM_IDENTITY_MIGRATION } from "./team_identity_migration.ts";
import { POSTGRES_TOKENS_TEAM_ID_MIGRATION } from "../tokens/team_id_migration.ts";
import {
  POSTGRES_TEAMS_MIGRATION,
  POSTGRES_TOKENS_CACHE_MIGRATION,
  POSTGRES_TOKENS_GUARDRAILS_MIGRATION,
  POSTGRES_TOKENS_MIGRATION,
  POSTGRES_TOKENS_TEAM_MIGRATION,
} from "../tokens/postgres_migration.ts";

/** A pool of connections to the gateway's schema. */
export type PostgresClient = postgres.Sql;

/**
 * The schema version this code writes. 1: usage records; 2: stored responses and their item index; 3: tokens
 * issued through the admin API, their secrets' hashes and the audit trail (`lib/tokens/store_postgres.ts`); 4:
 * per-token data by the token's identity, not its name (`ownership_migration.ts`); 5: usage records' `dropped`
 * (what a translated target did not get of the request); 6: usage records' `cache`, `saved_tokens` and
 * `saved_cost` (the response cache's outcome and what a hit saved); 7: tokens' `cache` (an issued token's
 * response-cache settings); 8: usage records' `trace_id` (the request's OpenTelemetry trace); 9: usage records'
 * `cost_input`, `cost_cached`, `cost_cache_write`, `cost_output` and `cost_reasoning` (the cost by token class);
 * 10: tokens' `team` and `end_user_limits`, and usage records' `team` (the team of the request's token); 11:
 * teams made through the admin API (`teams`, `lib/tokens/store_postgres.ts`); 12: usage records' `guardrails`
 * (what the guardrails did to the request, as `json`); 13: tokens' `guardrails` (the names of the guardrails
 * attached to an issued token, as `json`); 14: usage records' `team_id` (the identity of the request's token's
 * team: `team_identity_migration.ts`); 15: usage records' `cost_web_search` (what the web searches the upstream
 * ran cost); 16: tokens' `team_id` (membership by the team's identity, not its reusable name:
 * `lib/tokens/team_id_migration.ts`).
 */
export const POSTGRES_SCHEMA_VERSION = 16;

/** How to reach the database: `postgres` in the config. */
export interface PostgresOptions {
  /** `postgres://user[:pass]@host:port/db`. */
  url: string;
  /** The schema every table is in; a lower-case SQL identifier (the config checks it). */
  schema: string;
  /** Connections in the pool. Default 4. */
  poolSize?: number;
  /** Per call, in ms (connecting, and each statement on the server). Default 5 000. */
  timeoutMs?: number;
}

const SQL_TYPE: Record<ColumnKind, string> = {
  "text": "text NOT NULL",
  "text?": "text",
  "int": "bigint NOT NULL",
  "real": "double precision NOT NULL",
  "real?": "double precision",
  "bool": "boolean NOT NULL",
  "json?": "json",
};

/**
 * Migrations by the version they produce, each a list of statements run in the migrating transaction. Times
 * are kept as canonical ISO text (`toISOString()`), as in SQLite, so the shared usage query answers alike in
 * both (string order is time order); one index per admin filter paired with time.
 */
export const POSTGRES_MIGRATIONS: readonly (readonly [number, readonly string[]])[] = [
  [1, [
    `CREATE TABLE usage (
       uid text PRIMARY KEY,
       ${
      USAGE_COLUMNS.slice(0, USAGE_COLUMNS_V1).map(([name, kind]) => `${name} ${SQL_TYPE[kind]}`).join(
        ",\n       ",
      )
    }
     )`,
    "CREATE INDEX usage_time ON usage (time)",
    "CREATE INDEX usage_token_time ON usage (token, time)",
    "CREATE INDEX usage_alias_time ON usage (alias, time)",
    "CREATE INDEX usage_provider_time ON usage (provider, time)",
    "CREATE INDEX usage_environment_time ON usage (environment, time)",
    "CREATE INDEX usage_outcome_time ON usage (outcome, time)",
  ]],
  [2, [
    // The input items and the Response object are `json` (not `jsonb`): kept as the client got them, key order
    // included; an item is cut out of them by position (`->`), so only the item crosses the wire.
    `CREATE TABLE responses (
       id text PRIMARY KEY,
       token text NOT NULL,
       environment text NOT NULL,
       created_at double precision NOT NULL,
       alias text NOT NULL,
       provider text NOT NULL,
       native boolean NOT NULL,
       upstream_id text,
       previous_response_id text,
       input_items json NOT NULL,
       response json NOT NULL
     )`,
    "CREATE INDEX responses_created_at ON responses (created_at)",
    // One row per item id of a stored response; `seq` orders puts, so the newest holder of an id wins.
    `CREATE TABLE response_items (
       seq bigserial PRIMARY KEY,
       token text NOT NULL,
       item_id text NOT NULL,
       response_id text NOT NULL REFERENCES responses (id) ON DELETE CASCADE,
       output boolean NOT NULL,
       position integer NOT NULL
     )`,
    "CREATE INDEX response_items_lookup ON response_items (token, item_id, seq DESC)",
    "CREATE INDEX response_items_response ON response_items (response_id)",
  ]],
  [3, POSTGRES_TOKENS_MIGRATION],
  [4, POSTGRES_OWNERSHIP_MIGRATION],
  [5, ["ALTER TABLE usage ADD COLUMN dropped text"]],
  // Defaults, not NULLs: a record from before caching saved nothing (and adding a column with a constant
  // default rewrites no rows in PostgreSQL 11+).
  [6, [
    "ALTER TABLE usage ADD COLUMN cache text",
    "ALTER TABLE usage ADD COLUMN saved_tokens bigint NOT NULL DEFAULT 0",
    "ALTER TABLE usage ADD COLUMN saved_cost double precision NOT NULL DEFAULT 0",
  ]],
  [7, POSTGRES_TOKENS_CACHE_MIGRATION],
  [8, ["ALTER TABLE usage ADD COLUMN trace_id text"]],
  // Defaults, as for migration 6: a record from before the split reads as none (no rows rewritten).
  [
    9,
    COST_CLASS_COLUMNS_V10.map((c) =>
      `ALTER TABLE usage ADD COLUMN ${c} double precision NOT NULL DEFAULT 0`
    ),
  ],
  // NULL for the records and tokens from before teams (none; no rows rewritten). The index serves `team=`
  // (with time), and keeps no entries for records of no team.
  [10, [
    ...POSTGRES_TOKENS_TEAM_MIGRATION,
    "ALTER TABLE usage ADD COLUMN team text",
    "CREATE INDEX usage_team_time ON usage (team, time) WHERE team IS NOT NULL",
  ]],
  // A table of its own: tokens and records keep naming teams by name, as before.
  [11, POSTGRES_TEAMS_MIGRATION],
  // NULL for the records from before guardrails (none applied; no rows rewritten). `json`, not `jsonb`: kept
  // as written, and never indexed (the request log's `guardrail=` filter reads a time range, as `rule=` does).
  [12, ["ALTER TABLE usage ADD COLUMN guardrails json"]],
  // NULL for the tokens stored before it (no guardrails of their own; no rows rewritten).
  [13, POSTGRES_TOKENS_GUARDRAILS_MIGRATION],
  // The records with a team get the identity of the team that had its name then; the others keep NULL.
  [14, POSTGRES_TEAM_IDENTITY_MIGRATION],
  // A default, as for migration 9: a record from before it priced no search (no rows rewritten).
  [15, ["ALTER TABLE usage ADD COLUMN cost_web_search double precision NOT NULL DEFAULT 0"]],
  // Tokens with a team get the id of the team that has its name now; the others keep NULL.
  [16, POSTGRES_TOKENS_TEAM_ID_MIGRATION],
];

/** The database's schema is newer than this code's: never served against (it would misread the tables). */
export class SchemaTooNewError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SchemaTooNewError";
  }
}

/** Opens a pool to `options.schema` (connections are made lazily, on the first call). */
export function connectPostgres(options: PostgresOptions): PostgresClient {
  const timeoutMs = options.timeoutMs ?? 5_000;
  return postgres(options.url, {
    max: options.poolSize ?? 4,
    connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
    idle_timeout: 60,
    // postgres.js 3.4.9 fetches the database's array types on every new connection from a promise nobody
    // awaits: a connection ended during that fetch (a pool reset, a server going away) rejects it unhandled,
    // which ends the process. The gateway reads no arrays (percentiles come back as JSON), so it does not ask.
    fetch_types: false,
    onnotice: () => {},
    connection: {
      application_name: "gateway",
      search_path: options.schema,
      statement_timeout: Math.max(1, Math.round(timeoutMs)),
    },
  });
}

/**
 * The pool a store uses, replaceable: a call that outlives its time limit may sit on a connection whose
 * server went away without the client noticing (seen when PostgreSQL crashes mid-query), and calls queued
 * behind it would wait forever. The store then drops the whole pool and opens a fresh one.
 */
export class PostgresPool {
  #sql: PostgresClient;
  /** `options` are public so that a `LISTEN` can open a connection of its own that outlives a reset. */
  constructor(readonly options: PostgresOptions) {
    this.#sql = connectPostgres(options);
  }
  /** The current pool. */
  get sql(): PostgresClient {
    return this.#sql;
  }
  /** Drops every connection of the current pool at once and opens a fresh one (connecting lazily). */
  reset(): void {
    const old = this.#sql;
    this.#sql = connectPostgres(this.options);
    old.end({ timeout: 0 }).catch(() => {});
  }
  /** Ends the pool, giving running calls `timeoutS` seconds. */
  end(timeoutS = 5): Promise<void> {
    return this.#sql.end({ timeout: timeoutS });
  }
}

/** The least time a migration is given: more than a call's (`postgres.timeout`), for work on big tables. */
export const MIGRATION_TIMEOUT_MS = 30_000;

/** The time limit of a migration for a pool whose calls have `timeoutMs`. */
export function migrationTimeoutMs(timeoutMs: number): number {
  return Math.max(timeoutMs, MIGRATION_TIMEOUT_MS);
}

/**
 * Creates or migrates `schema` to {@linkcode POSTGRES_SCHEMA_VERSION}, holding the migration lock; rejects
 * when the database's schema is newer than this code's.
 *
 * The transaction sets its own `statement_timeout` and `lock_timeout` to `timeoutMs`: the pool's connections
 * cancel any statement after `postgres.timeout` (5 s by default), and an index built on a large usage table,
 * a migration that rewrites rows, or the wait for another replica's migration (the lock) may take longer. Cut
 * off there, it would be rolled back and tried again, and cut off again, for ever.
 */
export async function migratePostgres(
  sql: PostgresClient,
  schema: string,
  timeoutMs = MIGRATION_TIMEOUT_MS,
): Promise<void> {
  await sql.begin(async (tx) => {
    const limit = String(Math.max(1, Math.round(timeoutMs)));
    await tx.unsafe(
      "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)",
      [limit],
    );
    // Keyed by the schema, so fleets in other schemas of the same database do not wait for each other.
    await tx.unsafe("SELECT pg_advisory_xact_lock(hashtext('gateway_migrations'), hashtext($1))", [schema]);
    // Created only when missing: `CREATE SCHEMA IF NOT EXISTS` needs CREATE on the database even when the
    // schema exists, which a role given only a schema made for it (least privilege) does not have.
    const [exists] = await tx.unsafe("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (!exists) await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await tx.unsafe(
      `CREATE TABLE IF NOT EXISTS schema_versions (
         version integer PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const [row] = await tx.unsafe("SELECT COALESCE(MAX(version), 0) AS version FROM schema_versions");
    const current = Number(row?.version ?? 0);
    if (current > POSTGRES_SCHEMA_VERSION) {
      throw new SchemaTooNewError(
        `usage database schema version ${current} is newer than this gateway's (${POSTGRES_SCHEMA_VERSION})`,
      );
    }
    for (const [version, statements] of POSTGRES_MIGRATIONS) {
      if (version <= current) continue;
      for (const statement of statements) await tx.unsafe(statement);
      await tx.unsafe("INSERT INTO schema_versions (version) VALUES ($1)", [version]);
    }
    // Indexes for the admin console's reads, made at open under the same lock (no version of their own).
    for (const statement of POSTGRES_USAGE_INDEXES) await tx.unsafe(statement);
  });
}

/**
 * SQLSTATE classes that say the connection or the server is in trouble (08 connection exception, 53
 * insufficient resources, 57 operator intervention such as a shutdown or crash, 58 system error, XX internal
 * error). Any other error the server reports (a bad value, a constraint, a syntax error) came back over a
 * connection that is fine.
 */
const CONNECTION_CLASSES = new Set(["08", "53", "57", "58", "XX"]);

/**
 * Whether a failed call should replace the pool: yes for a timeout, a network error or a connection-level
 * SQLSTATE; no for an error the server reported about the statement itself. Replacing the pool ends its
 * connections at once, and postgres.js 3.4.9 can then reject an internal query of its own that nobody awaits
 * (an unhandled rejection that ends the process), so a run of bad statements must not reset it each time.
 *
 * A server error is told by its class, not its `name`: postgres.js sets `name` from `constructor.name`, which
 * a minifying build (the Bun binary) renames, and then every refused statement (a taken token name) reset
 * the pool and failed every call queued behind it.
 */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof postgres.PostgresError)) return true;
  const { code } = err as { code?: unknown };
  if (typeof code !== "string" || code.length !== 5) return true;
  return CONNECTION_CLASSES.has(code.slice(0, 2));
}

/**
 * The database refused the migration for good: a privilege the gateway's role lacks, or a statement it
 * rejects (SQLSTATE class 42). Trying again cannot help, so start-up stops with this rather than serving
 * as if the database were down.
 */
export class MigrationRefusedError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "MigrationRefusedError";
  }
}

/** `err` as a {@linkcode MigrationRefusedError} when the server refused the migration of `schema` for good. */
export function refusedMigration(err: unknown, schema: string): MigrationRefusedError | undefined {
  if (!(err instanceof postgres.PostgresError)) return undefined;
  const { code } = err as { code?: unknown };
  if (typeof code !== "string" || !code.startsWith("42")) return undefined;
  const hint = code === "42501"
    ? `: the gateway's role needs CREATE on the database, or an existing schema "${schema}" it may use and ` +
      `create tables in (CREATE SCHEMA "${schema}" AUTHORIZATION <role>)`
    : "";
  return new MigrationRefusedError(
    `the database refused to migrate schema "${schema}" (SQLSTATE ${code}: ${err.message})${hint}`,
    { cause: err },
  );
}

/** A call that outlived its time limit. */
export class PostgresTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PostgresTimeoutError";
  }
}

/**
 * Rejects with a timeout error when `promise` has not settled within `ms`: the server-side
 * `statement_timeout` does not cover a connection that hangs, and a stuck call must not hold the usage lane.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new PostgresTimeoutError(`PostgreSQL ${what} timed out after ${ms} ms`)),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
