/**
 * What the SQLite and PostgreSQL token stores share: how a token row maps to columns and back, and the audit
 * page query. Both keep the same tables (`tokens`, `token_secrets`, `token_audit`, `token_version`; their DDL
 * is in each store's file, in its own dialect), so one mapping and one query serve both, and they answer
 * alike, and alike with the memory store (`store_audit.ts` is the same order in TypeScript).
 *
 * Times are kept as the ISO text they were given (so a row comes back exactly as put); where they are
 * compared (the audit filters, a secret's end) a millisecond column beside them is used instead.
 *
 * @module
 */
import { clampLimit, isoToMs } from "./store_rules.ts";
import type { AuditAction, AuditEntry, AuditQuery, StoredTeam, StoredToken, TokenSecret } from "./types.ts";

/** A positional parameter, in the form both drivers take. */
export type TokenSqlValue = string | number | null;

/** The `tokens` columns, in the order {@linkcode tokenRow} gives their values. */
export const TOKEN_COLUMNS = [
  "id",
  "name",
  "environment",
  "description",
  "models",
  "endpoints",
  "limits",
  "budget",
  "max_tokens",
  "cache",
  "team",
  "team_id",
  "end_user_limits",
  "guardrails",
  "expires_at",
  "disabled",
  "created_at",
  "updated_at",
  "created_by",
  "revoked_at",
  "rotated_at",
] as const;

/** Columns holding JSON text. */
export const TOKEN_JSON_COLUMNS: ReadonlySet<string> = new Set([
  "models",
  "endpoints",
  "limits",
  "budget",
  "cache",
  "end_user_limits",
  "guardrails",
]);

/** `token`'s column values, in {@linkcode TOKEN_COLUMNS} order; JSON columns as text, `disabled` as 0/1. */
export function tokenRow(token: StoredToken): TokenSqlValue[] {
  const json = (v: unknown) => v === null || v === undefined ? null : JSON.stringify(v);
  return [
    token.id,
    token.name,
    token.environment,
    token.description,
    JSON.stringify(token.models),
    json(token.endpoints),
    json(token.limits),
    json(token.budget),
    token.max_tokens,
    json(token.cache),
    token.team ?? null,
    token.team_id ?? null,
    json(token.end_user_limits),
    json(token.guardrails),
    token.expires_at,
    token.disabled ? 1 : 0,
    token.created_at,
    token.updated_at,
    token.created_by,
    token.revoked_at,
    token.rotated_at,
  ];
}

/** A secret's end in ms for its comparable column; null (never ends) when it has none. */
export function secretEndMs(secret: TokenSecret): number | null {
  return secret.expires_at === null ? null : isoToMs(secret.expires_at, "secrets.expires_at");
}

function text(v: unknown): string {
  return String(v);
}

function textOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : String(v);
}

function jsonOrNull<T>(v: unknown): T | null {
  return v === null || v === undefined ? null : JSON.parse(String(v)) as T;
}

/**
 * The token of a `tokens` row (JSON columns read as text) with its secrets (a JSON array of `{sha256,
 * expires_at}` in order, as text). `disabled` may be 0/1 (SQLite) or a boolean (PostgreSQL).
 */
export function tokenOf(row: Record<string, unknown>, secretsJson: unknown): StoredToken {
  return {
    id: text(row.id),
    name: text(row.name),
    environment: text(row.environment),
    description: textOrNull(row.description),
    models: JSON.parse(String(row.models)) as string[],
    endpoints: jsonOrNull<StoredToken["endpoints"]>(row.endpoints),
    limits: jsonOrNull<StoredToken["limits"]>(row.limits),
    budget: jsonOrNull<StoredToken["budget"]>(row.budget),
    max_tokens: row.max_tokens === null || row.max_tokens === undefined ? null : Number(row.max_tokens),
    // JSON `false` is the text "false", which parses back to `false`; only SQL NULL is "not set".
    cache: jsonOrNull<StoredToken["cache"]>(row.cache),
    // NULL in rows written before teams (migration 11 / 10 added the columns): no team, no end-user limits.
    team: textOrNull(row.team),
    // NULL without a team; migration 17 / 16 gave the rows written before it their team's id.
    team_id: textOrNull(row.team_id),
    end_user_limits: jsonOrNull<StoredToken["end_user_limits"]>(row.end_user_limits),
    // NULL in rows written before guardrails on issued tokens (migration 14 / 13 added the column): none.
    guardrails: jsonOrNull<string[]>(row.guardrails),
    expires_at: textOrNull(row.expires_at),
    disabled: row.disabled === true || row.disabled === 1 || row.disabled === "1",
    created_at: text(row.created_at),
    updated_at: text(row.updated_at),
    created_by: text(row.created_by),
    revoked_at: textOrNull(row.revoked_at),
    rotated_at: textOrNull(row.rotated_at),
    secrets: secretsJson === null || secretsJson === undefined
      ? []
      : (JSON.parse(String(secretsJson)) as TokenSecret[]).map((s) => ({
        sha256: s.sha256,
        expires_at: s.expires_at ?? null,
      })),
  };
}

/**
 * The `teams` columns (schema migration 12 / 11), in the order {@linkcode teamRow} gives their values. A team
 * is a row of its own table, not a token, so neither store's token queries ever see one.
 */
export const TEAM_COLUMNS = [
  "id",
  "name",
  "description",
  "budget",
  "limits",
  "models",
  "created_at",
  "updated_at",
  "created_by",
  "deleted_at",
] as const;

/** Team columns holding JSON text. */
export const TEAM_JSON_COLUMNS: ReadonlySet<string> = new Set(["budget", "limits", "models"]);

/** `team`'s column values, in {@linkcode TEAM_COLUMNS} order; JSON columns as text. */
export function teamRow(team: StoredTeam): TokenSqlValue[] {
  const json = (v: unknown) => v === null || v === undefined ? null : JSON.stringify(v);
  return [
    team.id,
    team.name,
    team.description,
    json(team.budget),
    json(team.limits),
    json(team.models),
    team.created_at,
    team.updated_at,
    team.created_by,
    team.deleted_at,
  ];
}

/** The team of a `teams` row (JSON columns read as text). */
export function teamOf(row: Record<string, unknown>): StoredTeam {
  return {
    id: text(row.id),
    name: text(row.name),
    description: textOrNull(row.description),
    budget: jsonOrNull<StoredTeam["budget"]>(row.budget),
    limits: jsonOrNull<StoredTeam["limits"]>(row.limits),
    models: jsonOrNull<string[]>(row.models),
    created_at: text(row.created_at),
    updated_at: text(row.updated_at),
    created_by: text(row.created_by),
    deleted_at: textOrNull(row.deleted_at),
  };
}

/** The audit columns, in the order {@linkcode auditRow} gives their values. */
export const AUDIT_COLUMNS = [
  "id",
  "time",
  "time_ms",
  "actor",
  "action",
  "token_id",
  "token_name",
  "changes",
] as const;

/** `entry`'s column values in {@linkcode AUDIT_COLUMNS} order; `changes` as JSON text. */
export function auditRow(entry: AuditEntry): TokenSqlValue[] {
  return [
    entry.id,
    entry.time,
    isoToMs(entry.time, "audit.time"),
    entry.actor,
    entry.action,
    entry.token_id,
    entry.token_name,
    JSON.stringify(entry.changes ?? {}),
  ];
}

/** The entry of a `token_audit` row (`changes` read as text). */
export function auditOf(row: Record<string, unknown>): AuditEntry {
  return {
    id: text(row.id),
    time: text(row.time),
    actor: text(row.actor),
    action: text(row.action) as AuditAction,
    token_id: text(row.token_id),
    token_name: text(row.token_name),
    changes: JSON.parse(String(row.changes)) as Record<string, unknown>,
  };
}

/** Where an `after` cursor points: its entry's time and append order. */
export interface AuditCursor {
  readonly timeMs: number;
  readonly seq: number;
}

/** The cursor lookup for `after` (one `?`: the entry id). */
export const AUDIT_CURSOR_SQL = "SELECT time_ms, seq FROM token_audit WHERE id = ?";

/**
 * The page query for `query` (written with `?`; the PostgreSQL store numbers them), one row past the limit
 * so the caller can tell `has_more`. `changes` is the column expression that reads `changes` as text.
 */
export function auditPageSql(
  query: AuditQuery,
  cursor: AuditCursor | null,
  changes = "changes",
): { text: string; params: TokenSqlValue[]; limit: number } {
  const where: string[] = [];
  const params: TokenSqlValue[] = [];
  if (query.token !== undefined) {
    where.push("(token_id = ? OR token_name = ?)");
    params.push(query.token, query.token);
  }
  if (query.actor !== undefined) {
    where.push("actor = ?");
    params.push(query.actor);
  }
  if (query.action !== undefined) {
    where.push("action = ?");
    params.push(query.action);
  }
  if (query.from !== undefined) {
    where.push("time_ms >= ?");
    params.push(isoToMs(query.from, "from"));
  }
  if (query.to !== undefined) {
    where.push("time_ms < ?");
    params.push(isoToMs(query.to, "to"));
  }
  if (cursor !== null) {
    where.push("(time_ms < ? OR (time_ms = ? AND seq < ?))");
    params.push(cursor.timeMs, cursor.timeMs, cursor.seq);
  }
  const limit = clampLimit(query.limit);
  params.push(limit + 1);
  return {
    text: `SELECT id, time, actor, action, token_id, token_name, ${changes} AS changes FROM token_audit
      ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
      ORDER BY time_ms DESC, seq DESC LIMIT ?`,
    params,
    limit,
  };
}
