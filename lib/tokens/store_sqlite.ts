/**
 * Tokens issued through the admin API in the SQLite usage database: four tables made by schema migration 4
 * (`lib/usage/sqlite_store.ts`; migration 8 added `tokens.cache`, 11 `tokens.team` and
 * `tokens.end_user_limits`, 12 the `teams` table of teams made through the admin API, 14 `tokens.guardrails`, 17
 * `tokens.team_id`: `team_id_migration.ts`), on the usage database's connection, so the server reaches them through the usage store's worker (`tokens.*` calls) and the request
 * thread never waits on SQLite.
 *
 * - `tokens`: one row per token (lists and limits as JSON text); a partial unique index on `name` over the
 *   rows not revoked is what makes a second live token of the same name impossible.
 * - `token_secrets`: each token's secret hashes in order (the current one first) with their ends.
 * - `token_audit`: the audit trail; `seq` (the rowid) is the append order that breaks ties in time.
 * - `token_version`: one row, bumped by every put (of a token or a team).
 * - `teams`: one row per team made through the admin API (deleted ones kept, with `deleted_at`); a partial
 *   unique index on `name` over the rows not deleted keeps two live teams from sharing a name. Their audit
 *   entries go to `token_audit`, under the team's id.
 *
 * A put is one `BEGIN IMMEDIATE` transaction, its compare-and-set (`basedOn`) checked inside it. Only this
 * process writes the file, so there is nothing to watch: the directory reloads after its own puts.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { liveSecrets } from "./store_rules.ts";
import { rollback, run } from "../usage/sqlite_calls.ts";
import {
  AUDIT_COLUMNS,
  AUDIT_CURSOR_SQL,
  auditOf,
  auditPageSql,
  auditRow,
  secretEndMs,
  TEAM_COLUMNS,
  teamOf,
  teamRow,
  TOKEN_COLUMNS,
  tokenOf,
  tokenRow,
} from "./store_sql.ts";
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

/** Schema migration 4 of the usage database: the token tables. */
export const SQLITE_TOKENS_SQL = `CREATE TABLE tokens (
       id TEXT NOT NULL PRIMARY KEY,
       name TEXT NOT NULL,
       environment TEXT NOT NULL,
       description TEXT,
       models TEXT NOT NULL,
       endpoints TEXT,
       limits TEXT,
       budget TEXT,
       max_tokens INTEGER,
       expires_at TEXT,
       disabled INTEGER NOT NULL,
       created_at TEXT NOT NULL,
       updated_at TEXT NOT NULL,
       created_by TEXT NOT NULL,
       revoked_at TEXT,
       rotated_at TEXT
     );
     CREATE UNIQUE INDEX tokens_live_name ON tokens (name) WHERE revoked_at IS NULL;
     CREATE TABLE token_secrets (
       token_id TEXT NOT NULL,
       position INTEGER NOT NULL,
       sha256 TEXT NOT NULL,
       expires_at TEXT,
       expires_ms INTEGER,
       PRIMARY KEY (token_id, position)
     );
     CREATE INDEX token_secrets_expires ON token_secrets (expires_ms) WHERE expires_ms IS NOT NULL;
     CREATE TABLE token_audit (
       seq INTEGER PRIMARY KEY AUTOINCREMENT,
       id TEXT NOT NULL UNIQUE,
       time TEXT NOT NULL,
       time_ms INTEGER NOT NULL,
       actor TEXT NOT NULL,
       action TEXT NOT NULL,
       token_id TEXT NOT NULL,
       token_name TEXT NOT NULL,
       changes TEXT NOT NULL
     );
     CREATE INDEX token_audit_order ON token_audit (time_ms, seq);
     CREATE INDEX token_audit_token ON token_audit (token_id);
     CREATE INDEX token_audit_token_name ON token_audit (token_name);
     CREATE TABLE token_version (
       id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
       version INTEGER NOT NULL
     );
     INSERT INTO token_version (id, version) VALUES (1, 0);`;

/**
 * Schema migration 8 of the usage database: a token's response-cache settings (JSON text; NULL: none). A
 * column of its own, added to the table migration 4 made, so databases written before it keep their tokens.
 */
export const SQLITE_TOKENS_CACHE_SQL = "ALTER TABLE tokens ADD COLUMN cache TEXT;";

/**
 * The tokens' part of schema migration 11 of the usage database: a token's team (its name; NULL: none) and its
 * limits per end user (JSON text; NULL: none), added to the table migration 4 made, so tokens stored before
 * them keep working as they did (in no team, no end-user limits).
 */
export const SQLITE_TOKENS_TEAM_SQL = `ALTER TABLE tokens ADD COLUMN team TEXT;
     ALTER TABLE tokens ADD COLUMN end_user_limits TEXT;`;

/**
 * Schema migration 14 of the usage database: the guardrails attached to a token (their names, as JSON text;
 * NULL: none), added to the table migration 4 made, so tokens stored before it keep working as they did.
 */
export const SQLITE_TOKENS_GUARDRAILS_SQL = "ALTER TABLE tokens ADD COLUMN guardrails TEXT;";

/**
 * Schema migration 12 of the usage database: teams made through the admin API. A table of its own beside the
 * tokens' (a team is no token), with the same partial unique index on the live name as `tokens`; a deleted
 * team's row stays so the audit trail's `token_id` keeps naming something.
 */
export const SQLITE_TEAMS_SQL = `CREATE TABLE teams (
       id TEXT NOT NULL PRIMARY KEY,
       name TEXT NOT NULL,
       description TEXT,
       budget TEXT,
       limits TEXT,
       models TEXT,
       created_at TEXT NOT NULL,
       updated_at TEXT NOT NULL,
       created_by TEXT NOT NULL,
       deleted_at TEXT
     );
     CREATE UNIQUE INDEX teams_live_name ON teams (name) WHERE deleted_at IS NULL;`;

/**
 * The `TokenStore` over an open, migrated usage database. `open` throws once the database is closed; the
 * usage store that owns `db` closes it, so `close()` here only stops this store's own calls.
 */
export function createSqliteTokenStore(db: DatabaseSync, open: () => void): TokenStore {
  const upsertStmt = db.prepare(
    `INSERT INTO tokens (${TOKEN_COLUMNS.join(", ")}) VALUES (${TOKEN_COLUMNS.map(() => "?").join(", ")})
     ON CONFLICT (id) DO UPDATE SET
       ${TOKEN_COLUMNS.filter((c) => c !== "id").map((c) => `${c} = excluded.${c}`).join(", ")}`,
  );
  const nameTakenStmt = db.prepare(
    "SELECT 1 AS taken FROM tokens WHERE name = ? AND revoked_at IS NULL AND id <> ? LIMIT 1",
  );
  const updatedAtStmt = db.prepare("SELECT updated_at FROM tokens WHERE id = ?");
  const teamLiveStmt = db.prepare("SELECT 1 AS live FROM teams WHERE id = ? AND deleted_at IS NULL");
  const membersStmt = db.prepare(
    "SELECT name FROM tokens WHERE team_id = ? AND revoked_at IS NULL ORDER BY name LIMIT 6",
  );
  const clearSecretsStmt = db.prepare("DELETE FROM token_secrets WHERE token_id = ?");
  const pruneSecretsStmt = db.prepare(
    "DELETE FROM token_secrets WHERE expires_ms IS NOT NULL AND expires_ms <= ?",
  );
  const secretStmt = db.prepare(
    "INSERT INTO token_secrets (token_id, position, sha256, expires_at, expires_ms) VALUES (?, ?, ?, ?, ?)",
  );
  const auditStmt = db.prepare(
    `INSERT INTO token_audit (${AUDIT_COLUMNS.join(", ")}) VALUES (${
      AUDIT_COLUMNS.map(() => "?").join(", ")
    })`,
  );
  const bumpStmt = db.prepare("UPDATE token_version SET version = version + 1 WHERE id = 1");
  const versionStmt = db.prepare("SELECT version FROM token_version WHERE id = 1");
  const tokensStmt = db.prepare(
    `SELECT t.*, (SELECT json_group_array(json_object('sha256', s.sha256, 'expires_at', s.expires_at)
         ORDER BY s.position) FROM token_secrets s WHERE s.token_id = t.id) AS secrets
     FROM tokens t ORDER BY t.name, t.id`,
  );
  const cursorStmt = db.prepare(AUDIT_CURSOR_SQL);
  const teamsStmt = db.prepare("SELECT * FROM teams WHERE deleted_at IS NULL ORDER BY name, id");
  const upsertTeamStmt = db.prepare(
    `INSERT INTO teams (${TEAM_COLUMNS.join(", ")}) VALUES (${TEAM_COLUMNS.map(() => "?").join(", ")})
     ON CONFLICT (id) DO UPDATE SET
       ${TEAM_COLUMNS.filter((c) => c !== "id").map((c) => `${c} = excluded.${c}`).join(", ")}`,
  );
  const teamNameTakenStmt = db.prepare(
    "SELECT 1 AS taken FROM teams WHERE name = ? AND deleted_at IS NULL AND id <> ? LIMIT 1",
  );
  const teamUpdatedAtStmt = db.prepare("SELECT updated_at FROM teams WHERE id = ?");
  let closed = false;
  const ready = () => {
    if (closed) throw new Error("token store is closed");
    open();
  };
  const currentVersion = () =>
    Number((versionStmt.get() as Record<string, unknown> | undefined)?.version ?? 0);

  const put = (
    token: StoredToken,
    audit: Parameters<TokenStore["put"]>[1],
    basedOn?: string | null,
    joins?: string,
  ) => {
    const nowMs = Date.now();
    const row = tokenRow(token);
    const secrets = liveSecrets(token.secrets, nowMs).map((s) =>
      [s.sha256, s.expires_at, secretEndMs(s)] as const
    );
    const entry = auditRow(audit);
    db.exec("BEGIN IMMEDIATE");
    try {
      if (basedOn !== undefined) {
        const stored = updatedAtStmt.get(token.id) as Record<string, unknown> | undefined;
        if ((stored === undefined ? null : String(stored.updated_at)) !== basedOn) {
          throw new TokenChangedError(token.id);
        }
      }
      if (token.revoked_at === null && nameTakenStmt.get(token.name, token.id) !== undefined) {
        throw new TokenNameTakenError(token.name);
      }
      if (joins !== undefined && teamLiveStmt.get(joins) === undefined) {
        throw new TeamGoneError(token.team ?? "");
      }
      upsertStmt.run(...row);
      clearSecretsStmt.run(token.id);
      pruneSecretsStmt.run(nowMs);
      secrets.forEach(([sha256, expiresAt, endMs], position) =>
        secretStmt.run(token.id, position, sha256, expiresAt, endMs)
      );
      auditStmt.run(...entry);
      bumpStmt.run();
      db.exec("COMMIT");
    } catch (e) {
      rollback(db);
      // The index is the last word should the check above ever miss a case.
      if (e instanceof Error && /UNIQUE constraint failed: tokens\.name/.test(e.message)) {
        throw new TokenNameTakenError(token.name);
      }
      throw e;
    }
  };

  const putTeam = (team: StoredTeam, audit: Parameters<TokenStore["put"]>[1], basedOn?: string | null) => {
    const row = teamRow(team);
    const entry = auditRow(audit);
    db.exec("BEGIN IMMEDIATE");
    try {
      if (basedOn !== undefined) {
        const stored = teamUpdatedAtStmt.get(team.id) as Record<string, unknown> | undefined;
        if ((stored === undefined ? null : String(stored.updated_at)) !== basedOn) {
          throw new TokenChangedError(team.id);
        }
      }
      if (team.deleted_at === null && teamNameTakenStmt.get(team.name, team.id) !== undefined) {
        throw new TeamNameTakenError(team.name);
      }
      if (team.deleted_at !== null) {
        const members = (membersStmt.all(team.id) as Record<string, unknown>[]).map((r) => String(r.name));
        if (members.length > 0) throw new TeamHasMembersError(team.name, members);
      }
      upsertTeamStmt.run(...row);
      auditStmt.run(...entry);
      bumpStmt.run();
      db.exec("COMMIT");
    } catch (e) {
      rollback(db);
      if (e instanceof Error && /UNIQUE constraint failed: teams\.name/.test(e.message)) {
        throw new TeamNameTakenError(team.name);
      }
      throw e;
    }
  };

  return {
    kind: "sqlite",
    loadAll() {
      return run(() => {
        ready();
        // One read transaction, so the version is the one the rows are current at.
        db.exec("BEGIN");
        try {
          const version = currentVersion();
          const rows = tokensStmt.all() as Record<string, unknown>[];
          const teams = teamsStmt.all() as Record<string, unknown>[];
          db.exec("COMMIT");
          return { version, tokens: rows.map((r) => tokenOf(r, r.secrets)), teams: teams.map(teamOf) };
        } catch (e) {
          rollback(db);
          throw e;
        }
      });
    },
    version() {
      return run(() => {
        ready();
        return currentVersion();
      });
    },
    put(token, audit, basedOn, joins) {
      return run(() => {
        ready();
        put(token, audit, basedOn, joins);
      });
    },
    putTeam(team, audit, basedOn) {
      return run(() => {
        ready();
        putTeam(team, audit, basedOn);
      });
    },
    audit(query) {
      return run(() => {
        ready();
        let cursor = null;
        if (query.after !== undefined) {
          const row = cursorStmt.get(query.after) as Record<string, unknown> | undefined;
          if (row === undefined) throw new AuditCursorError(query.after);
          cursor = { timeMs: Number(row.time_ms), seq: Number(row.seq) };
        }
        const { text, params, limit } = auditPageSql(query, cursor);
        const rows = db.prepare(text).all(...params) as Record<string, unknown>[];
        return { entries: rows.slice(0, limit).map(auditOf), has_more: rows.length > limit };
      });
    },
    close() {
      closed = true;
      return Promise.resolve();
    },
  };
}
