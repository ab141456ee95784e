/**
 * Tokens issued through the admin API in PostgreSQL (`postgres:` configured), in the fleet's schema, shared by
 * every replica: the tables of schema migration 3 (`lib/usage/postgres_schema.ts`), the same four as in
 * SQLite (`store_sqlite.ts`), and `teams` (migration 11) for teams made through the admin API.
 *
 * - `put` is one transaction: it bumps the version first (the row lock orders concurrent puts, every replica's),
 *   checks its compare-and-set (`basedOn`, against the row as the put before it left it), writes the token,
 *   its secrets and the audit entry, and queues `pg_notify('gateway_tokens', <schema>)`, which PostgreSQL
 *   delivers only when the transaction commits. A second live token with the same name fails the partial
 *   unique index on `name` and is a {@linkcode TokenNameTakenError}, however the replicas race. `putTeam` is
 *   the same transaction for a team (`teams_live_name`: {@linkcode TeamNameTakenError}), on the same version
 *   and channel, so replicas hear of a team's change as of a token's.
 * - A refused put (a taken name, a changed token) or an audit cursor naming no entry is answered from inside
 *   the call and thrown after it, never through it: a call that throws may reset the pool
 *   (`isConnectionFailure`), which would fail every put queued behind it.
 * - `watch` keeps a connection of its own (the store's pool is replaced after a failed call, which would cut
 *   a `LISTEN` on it) and listens on that channel, taking only its own schema's notifications (fleets in
 *   other schemas of the database share the channel). When the connection is lost (the database restarted)
 *   it connects and listens again, with backoff, for as long as it runs; once listening again it calls
 *   `onChange`, since changes made meanwhile were not heard. The directory's version check every second
 *   remains the safety net for a connection that hangs without closing.
 *
 * @module
 */
import postgres from "postgres";
import type { PostgresCall } from "../usage/responses_store_postgres.ts";
import {
  AUDIT_COLUMNS,
  AUDIT_CURSOR_SQL,
  type AuditCursor,
  auditOf,
  auditPageSql,
  auditRow,
  secretEndMs,
  TEAM_COLUMNS,
  TEAM_JSON_COLUMNS,
  teamOf,
  teamRow,
  TOKEN_COLUMNS,
  TOKEN_JSON_COLUMNS,
  tokenOf,
  tokenRow,
} from "./store_sql.ts";
import { liveSecrets } from "./store_rules.ts";
import {
  AuditCursorError,
  type StoredTeam,
  type StoredToken,
  TeamGoneError,
  TeamHasMembersError,
  TeamNameTakenError,
  TokenChangedError,
  TokenNameTakenError,
  type TokenStore,
} from "./types.ts";

/** The channel every fleet's token changes are notified on; the payload is the schema. */
export const TOKENS_CHANNEL = "gateway_tokens";

/** How `watch` reaches the database: the store's own connection settings. */
export interface TokenListenOptions {
  url: string;
  schema: string;
  /** Connect time limit, ms. */
  timeoutMs: number;
}

/** `text` with its `?` placeholders numbered as PostgreSQL's `$1…`. */
function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

const TOKEN_SELECT = TOKEN_COLUMNS.map((c) => TOKEN_JSON_COLUMNS.has(c) ? `t.${c}::text AS ${c}` : `t.${c}`)
  .join(", ");

const TEAM_SELECT = TEAM_COLUMNS.map((c) => TEAM_JSON_COLUMNS.has(c) ? `${c}::text AS ${c}` : c).join(", ");

/** Whether `err` is a unique violation of the teams' live-name index (as {@linkcode isTokenNameTaken}). */
export function isTeamNameTaken(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; constraint_name?: unknown };
  return e.code === "23505" && e.constraint_name === "teams_live_name";
}

/**
 * Whether `err` is a unique violation of the live-name index, as postgres.js reports it: a put's refusal,
 * not a sign of a broken connection (the usage store does not reset its pool for it).
 */
export function isTokenNameTaken(err: unknown): boolean {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; constraint_name?: unknown };
  return e.code === "23505" && e.constraint_name === "tokens_live_name";
}

/** Appends an audit entry (its `auditRow` values) inside a put's transaction. */
async function insertAudit(tx: postgres.TransactionSql, entry: (string | number | null)[]): Promise<void> {
  await tx.unsafe(
    `INSERT INTO token_audit (${AUDIT_COLUMNS.join(", ")})
     VALUES (${
      AUDIT_COLUMNS.map((c, i) => c === "changes" ? `$${i + 1}::text::json` : `$${i + 1}`).join(", ")
    })`,
    entry,
  );
}

/** Thrown inside a put's transaction to roll it back when its compare-and-set fails; never leaves the call. */
const CHANGED = Symbol("token changed");
/** Thrown inside a put's transaction when the team the token joins is deleted (`TeamGoneError`). */
const TEAM_GONE = Symbol("team gone");
/** Thrown inside a team's delete while tokens still name it (`TeamHasMembersError`). */
const HAS_MEMBERS = Symbol("team has members");

/**
 * The `TokenStore` over the usage store's `call` (its time limit, closed check and pool reset); `listen`
 * says how `watch` opens its own connection. `close()` stops every watch; the pool closes with the usage
 * store.
 */
export function createPostgresTokenStore(call: PostgresCall, listen: TokenListenOptions): TokenStore {
  const watchers = new Set<() => Promise<void>>();
  let closed = false;
  const checkOpen = () => {
    if (closed) throw new Error("token store is closed");
  };

  return {
    kind: "postgres",
    async loadAll() {
      checkOpen();
      // One statement, one snapshot: the version is the one the rows are current at. Written so the planner
      // sees its true size (one version row, the secrets grouped once): the plain join of `token_version` with a
      // correlated subquery per token was estimated at millions of rows, and PostgreSQL's JIT spent 80-200 ms
      // compiling it on every load, which every change of a token waits for twice.
      // Tokens and teams in one read-only repeatable-read transaction: one snapshot, one version for both.
      const { rows, teams } = await call(
        "token load",
        (sql) =>
          sql.begin("isolation level repeatable read read only", async (tx) => ({
            rows: [
              ...await tx.unsafe(
                `SELECT v.version AS store_version, ${TOKEN_SELECT}, s.secrets
           FROM (SELECT version FROM token_version LIMIT 1) v
           LEFT JOIN tokens t ON true
           LEFT JOIN (
             SELECT token_id, json_agg(json_build_object('sha256', sha256, 'expires_at', expires_at)
               ORDER BY position)::text AS secrets
             FROM token_secrets GROUP BY token_id
           ) s ON s.token_id = t.id
           ORDER BY t.name, t.id`,
              ),
            ],
            teams: [
              ...await tx.unsafe(
                `SELECT ${TEAM_SELECT} FROM teams WHERE deleted_at IS NULL ORDER BY name, id`,
              ),
            ],
          })),
      );
      const version = Number(rows[0]?.store_version ?? 0);
      return {
        version,
        tokens: rows.filter((r) => r.id !== null).map((r) => tokenOf(r, r.secrets)),
        teams: teams.map(teamOf),
      };
    },
    async version() {
      checkOpen();
      const [row] = await call("token version", (sql) => sql.unsafe("SELECT version FROM token_version"));
      return Number(row?.version ?? 0);
    },
    async put(token: StoredToken, audit, basedOn, joins) {
      checkOpen();
      const nowMs = Date.now();
      const row = tokenRow(token).map((v, i) => TOKEN_COLUMNS[i] === "disabled" ? v === 1 : v);
      // Everything that can throw on bad input is worked out before the call: a failed call resets the pool.
      const secrets = liveSecrets(token.secrets, nowMs).map((s) => [s.sha256, s.expires_at, secretEndMs(s)]);
      const entry = auditRow(audit);
      const values = TOKEN_COLUMNS.map((c, i) =>
        TOKEN_JSON_COLUMNS.has(c) ? `$${i + 1}::text::json` : `$${i + 1}`
      );
      const outcome = await call("token put", async (sql) => {
        try {
          await sql.begin(async (tx) => {
            await tx.unsafe("UPDATE token_version SET version = version + 1");
            if (basedOn !== undefined) {
              // Read once the version's row lock is held: the row as the last committed put left it.
              const [stored] = await tx.unsafe("SELECT updated_at FROM tokens WHERE id = $1", [token.id]);
              if ((stored === undefined ? null : String(stored.updated_at)) !== basedOn) throw CHANGED;
            }
            if (joins !== undefined) {
              const [live] = await tx.unsafe("SELECT 1 FROM teams WHERE id = $1 AND deleted_at IS NULL", [
                joins,
              ]);
              if (live === undefined) throw TEAM_GONE;
            }
            await tx.unsafe(
              `INSERT INTO tokens (${TOKEN_COLUMNS.join(", ")}) VALUES (${values.join(", ")})
               ON CONFLICT (id) DO UPDATE SET
                 ${TOKEN_COLUMNS.filter((c) => c !== "id").map((c) => `${c} = excluded.${c}`).join(", ")}`,
              row,
            );
            await tx.unsafe(
              "DELETE FROM token_secrets WHERE token_id = $1 OR (expires_ms IS NOT NULL AND expires_ms <= $2)",
              [token.id, nowMs],
            );
            if (secrets.length > 0) {
              const params: (string | number | null)[] = [];
              const tuples = secrets.map(([sha256, expiresAt, endMs], position) => {
                const at = params.length;
                params.push(token.id, position, sha256, expiresAt, endMs);
                return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5})`;
              });
              await tx.unsafe(
                `INSERT INTO token_secrets (token_id, position, sha256, expires_at, expires_ms)
                 VALUES ${tuples.join(", ")}`,
                params,
                { prepare: false },
              );
            }
            await insertAudit(tx, entry);
            await tx.unsafe("SELECT pg_notify($1, $2)", [TOKENS_CHANNEL, listen.schema]);
          });
          return "written";
        } catch (err) {
          // Rolled back by now. These refusals are the caller's; the connection is fine and must stay.
          if (err === CHANGED) return "changed";
          if (err === TEAM_GONE) return "team gone";
          if (isTokenNameTaken(err)) return "name taken";
          throw err;
        }
      });
      if (outcome === "changed") throw new TokenChangedError(token.id);
      if (outcome === "team gone") throw new TeamGoneError(token.team ?? "");
      if (outcome === "name taken") throw new TokenNameTakenError(token.name);
    },
    async putTeam(team: StoredTeam, audit, basedOn) {
      checkOpen();
      let members: string[] = [];
      // Worked out before the call, as in `put`: a failed call resets the pool.
      const row = teamRow(team);
      const entry = auditRow(audit);
      const values = TEAM_COLUMNS.map((c, i) =>
        TEAM_JSON_COLUMNS.has(c) ? `$${i + 1}::text::json` : `$${i + 1}`
      );
      const outcome = await call("team put", async (sql) => {
        try {
          await sql.begin(async (tx) => {
            await tx.unsafe("UPDATE token_version SET version = version + 1");
            if (basedOn !== undefined) {
              const [stored] = await tx.unsafe("SELECT updated_at FROM teams WHERE id = $1", [team.id]);
              if ((stored === undefined ? null : String(stored.updated_at)) !== basedOn) throw CHANGED;
            }
            if (team.deleted_at !== null) {
              const rows = await tx.unsafe(
                "SELECT name FROM tokens WHERE team_id = $1 AND revoked_at IS NULL ORDER BY name LIMIT 6",
                [team.id],
              );
              if (rows.length > 0) {
                members = rows.map((r) => String(r.name));
                throw HAS_MEMBERS;
              }
            }
            await tx.unsafe(
              `INSERT INTO teams (${TEAM_COLUMNS.join(", ")}) VALUES (${values.join(", ")})
               ON CONFLICT (id) DO UPDATE SET
                 ${TEAM_COLUMNS.filter((c) => c !== "id").map((c) => `${c} = excluded.${c}`).join(", ")}`,
              row,
            );
            await insertAudit(tx, entry);
            await tx.unsafe("SELECT pg_notify($1, $2)", [TOKENS_CHANNEL, listen.schema]);
          });
          return "written";
        } catch (err) {
          if (err === CHANGED) return "changed";
          if (err === HAS_MEMBERS) return "has members";
          if (isTeamNameTaken(err)) return "name taken";
          throw err;
        }
      });
      if (outcome === "changed") throw new TokenChangedError(team.id);
      if (outcome === "has members") throw new TeamHasMembersError(team.name, members);
      if (outcome === "name taken") throw new TeamNameTakenError(team.name);
    },
    async audit(query) {
      checkOpen();
      auditPageSql(query, null); // a bad filter throws here, before the call (a failed call resets the pool)
      const page = await call("token audit", async (sql) => {
        let cursor: AuditCursor | null = null;
        if (query.after !== undefined) {
          const [row] = await sql.unsafe(numbered(AUDIT_CURSOR_SQL), [query.after]);
          if (row === undefined) return null;
          cursor = { timeMs: Number(row.time_ms), seq: Number(row.seq) };
        }
        const { text, params, limit } = auditPageSql(query, cursor, "changes::text");
        const rows = [...await sql.unsafe(numbered(text), params)];
        return { entries: rows.slice(0, limit).map(auditOf), has_more: rows.length > limit };
      });
      if (page === null) throw new AuditCursorError(query.after ?? "");
      return page;
    },
    async watch(onChange) {
      checkOpen();
      const watcher = startListening(listen, onChange);
      watchers.add(watcher.stop);
      await watcher.firstAttempt;
      return async () => {
        watchers.delete(watcher.stop);
        await watcher.stop();
      };
    },
    async close() {
      closed = true;
      const stops = [...watchers];
      watchers.clear();
      await Promise.all(stops.map((stop) => stop()));
    },
  };
}

/** Backoff between attempts to listen again: 250 ms doubling to 2 s (a restart is heard within ~2 s of it). */
function backoffMs(failures: number): number {
  return Math.min(2_000, 250 * 2 ** Math.min(failures, 3));
}

/**
 * Listens on {@linkcode TOKENS_CHANNEL} on a connection of its own, again and again until stopped.
 * `firstAttempt` settles (never rejects) once the first `LISTEN` succeeded or failed; after a failure it
 * keeps trying in the background.
 */
function startListening(
  options: TokenListenOptions,
  onChange: () => void,
): { firstAttempt: Promise<void>; stop(): Promise<void> } {
  let client: postgres.Sql | null = null;
  let stopped = false;
  let first = true;
  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const notify = () => {
    try {
      onChange();
    } catch {
      // a listener's failure is its own; listening goes on
    }
  };
  /** Drops `c` (if it is still the current client) and tries again after the backoff. */
  const lost = (c: postgres.Sql) => {
    if (client !== c) return;
    client = null;
    c.end({ timeout: 0 }).catch(() => {});
    if (stopped) return;
    timer = setTimeout(attempt, backoffMs(failures++));
  };
  const attempt = async (): Promise<void> => {
    timer = undefined;
    if (stopped) return;
    // `onnotify` is the hook postgres.js's own `listen` is built on; it is missing from its types only. It
    // is used directly so that this code, not the library, decides when to connect and listen again.
    const settings: postgres.Options<Record<string, never>> & {
      onnotify(channel: string, payload: string): void;
    } = {
      max: 1,
      idle_timeout: 0, // never: the connection is idle between notifications by design
      max_lifetime: null,
      connect_timeout: Math.max(1, Math.ceil(options.timeoutMs / 1000)),
      // As in connectPostgres: the array-type fetch of a new connection can reject unhandled when it is cut.
      fetch_types: false,
      onnotice: () => {},
      onnotify: (channel, payload) => {
        if (client === c && channel === TOKENS_CHANNEL && payload === options.schema) notify();
      },
      onclose: () => lost(c),
      connection: { application_name: "gateway-tokens-listen" },
    };
    const c = postgres(options.url, settings);
    client = c;
    const wasFirst = first;
    first = false;
    try {
      await c.unsafe(`LISTEN ${TOKENS_CHANNEL}`);
    } catch {
      lost(c);
      return;
    }
    if (client !== c) return;
    failures = 0;
    // Whatever changed while nobody listened (since the first attempt) was not heard: the caller reloads.
    if (!wasFirst) notify();
  };
  return {
    firstAttempt: attempt(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end({ timeout: 1 }).catch(() => {});
    },
  };
}
