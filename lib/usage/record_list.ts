/**
 * The request log (`GET /admin/requests`) as SQL over the `usage` table, shared by the SQLite and PostgreSQL
 * stores: the usage filters (`query.ts`'s WHERE clause) plus a status, a trace id and a guardrail, newest first,
 * paged by keyset.
 *
 * The cursor is the (time, uid) of the last record of a page, and the next page is the records strictly
 * before it in (time DESC, uid DESC) order. Records that arrive while an operator pages are newer than the
 * first page (they would be on a page before it) or, for a request that finished late, land in their place by
 * time; either way no record is shown twice and none that was there is skipped, which an offset would not give.
 * uids are compared bytewise in both stores, so a cursor from one replica pages alike on another.
 *
 * @module
 */
import {
  boundedGuardrails,
  GUARDRAIL_LIMITS,
  type RecordListQuery,
  type RecordPage,
  TRACE_ID_PATTERN,
  USAGE_COLUMNS,
  type UsageRecord,
} from "./record.ts";
import { type SqlAll, type SqlAllAsync, type SqlValue, UsageQueryError, whereOf } from "./query.ts";
import { type SqlDialect, SQLITE_DIALECT } from "./sql_dialect.ts";

/** Records per page when the query does not say. */
export const DEFAULT_RECORD_LIMIT = 100;
/** The most records one page may hold. */
export const MAX_RECORD_LIMIT = 1000;

/** The usage record's fields, as the request log answers them (never the internal uid): every stored column. */
const RECORD_FIELDS = USAGE_COLUMNS.map(([name]) => name);

/** The position of a record in the log: what a cursor holds. */
interface Position {
  time: string;
  uid: string;
}

/** The opaque cursor of `pos` (base64url of its JSON): clients pass it back and never read it. */
export function encodeCursor(pos: Position): string {
  const bytes = new TextEncoder().encode(JSON.stringify([pos.time, pos.uid]));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A time as `Date.prototype.toISOString` writes one in years 0000–9999. */
const CANONICAL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The position in `cursor`; a cursor not made by {@linkcode encodeCursor} is the client's 400 on `before`. */
export function decodeCursor(cursor: string): Position {
  const bad = () => new UsageQueryError("before must be the next_cursor of a previous page", "before");
  if (!/^[A-Za-z0-9_-]{1,2000}$/.test(cursor)) throw bad();
  let parsed: unknown;
  try {
    const binary = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    parsed = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))),
    );
  } catch {
    throw bad();
  }
  if (
    !Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== "string" ||
    typeof parsed[1] !== "string"
  ) {
    throw bad();
  }
  const [time, uid] = parsed;
  // A position's time is as `toISOString` wrote the records' times: anything else is no position of a page
  // (compared as text, it would list from an arbitrary place). An empty uid is before every record of its time.
  if (!CANONICAL_TIME.test(time) || new Date(time).toISOString() !== time || uid.length > 200) {
    throw bad();
  }
  return { time, uid };
}

/** The page size of `q`, checked (1-{@linkcode MAX_RECORD_LIMIT}). */
function limitOf(q: RecordListQuery): number {
  const limit = q.limit ?? DEFAULT_RECORD_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RECORD_LIMIT) {
    throw new UsageQueryError(`limit must be an integer from 1 to ${MAX_RECORD_LIMIT}`, "limit");
  }
  return limit;
}

/**
 * The SELECT of one page (one row more than the page, to know whether another follows) and its parameters.
 * The ORDER BY matches the `usage_time_uid` index, so a first page costs the page, not the table.
 */
export function listSql(
  q: RecordListQuery,
  dialect: SqlDialect,
): { sql: string; params: SqlValue[]; limit: number } {
  const limit = limitOf(q);
  const where = whereOf(q, dialect);
  const conds = [where.sql];
  const params = [...where.params];
  const status = q.status;
  if (status !== undefined) {
    if ("code" in status) {
      if (!Number.isInteger(status.code)) {
        throw new UsageQueryError("status must be a code or a class", "status");
      }
      conds.push("status = ?");
      params.push(status.code);
    } else {
      if (!Number.isInteger(status.class)) {
        throw new UsageQueryError("status must be a code or a class", "status");
      }
      conds.push("status >= ? AND status < ?");
      params.push(status.class * 100, status.class * 100 + 100);
    }
  }
  if (q.trace_id !== undefined) {
    if (typeof q.trace_id !== "string" || !TRACE_ID_PATTERN.test(q.trace_id)) {
      throw new UsageQueryError("trace_id must be 32 lower-case hex digits", "trace_id");
    }
    conds.push("trace_id = ?");
    params.push(q.trace_id);
  }
  if (q.guardrail !== undefined) {
    if (
      typeof q.guardrail !== "string" || q.guardrail === "" || q.guardrail.length > GUARDRAIL_LIMITS.chars
    ) {
      throw new UsageQueryError(
        `guardrail must be a guardrail's name (1-${GUARDRAIL_LIMITS.chars} characters)`,
        "guardrail",
      );
    }
    conds.push(dialect.guardrailMatch);
    params.push(q.guardrail);
  }
  const uid = dialect.bytewise("uid");
  if (q.before !== undefined) {
    const pos = decodeCursor(q.before);
    // A row value, so both engines read it as a range on the (time, uid) index.
    conds.push(`(time, ${uid}) < (?, ?)`);
    params.push(pos.time, pos.uid);
  }
  const sql = `SELECT uid, ${RECORD_FIELDS.join(", ")} FROM usage WHERE ${conds.join(" AND ")}
     ORDER BY time DESC, ${uid} DESC LIMIT ${limit + 1}`;
  return { sql, params, limit };
}

/** The page from the rows of {@linkcode listSql} (up to `limit + 1` of them). */
export function pageOf(rows: Record<string, unknown>[], limit: number): RecordPage {
  const has_more = rows.length > limit;
  const kept = has_more ? rows.slice(0, limit) : rows;
  const last = kept.at(-1);
  return {
    data: kept.map(recordOf),
    has_more,
    next_cursor: has_more && last !== undefined
      ? encodeCursor({ time: String(last.time), uid: String(last.uid) })
      : null,
  };
}

/** Runs the request log query through `all` (SQLite). Rejects bad input with `UsageQueryError`. */
export function runListRecords(q: RecordListQuery, all: SqlAll): RecordPage {
  const { sql, params, limit } = listSql(q, SQLITE_DIALECT);
  return pageOf(all(sql, params), limit);
}

/** {@linkcode runListRecords} for a networked store, in `dialect`. */
export async function runListRecordsAsync(
  q: RecordListQuery,
  all: SqlAllAsync,
  dialect: SqlDialect,
): Promise<RecordPage> {
  const { sql, params, limit } = listSql(q, dialect);
  return pageOf(await all(sql, params), limit);
}

/** A row as the usage record: booleans from 0/1 (SQLite) or true/false, numbers from bigint text (PostgreSQL). */
function recordOf(row: Record<string, unknown>): UsageRecord {
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
  const num = (v: unknown) => Number(v ?? 0);
  return {
    time: String(row.time),
    request_id: String(row.request_id),
    token: text(row.token),
    token_id: text(row.token_id),
    environment: text(row.environment),
    alias: text(row.alias),
    provider: text(row.provider),
    upstream_model: text(row.upstream_model),
    endpoint: String(row.endpoint),
    stream: row.stream === true || Number(row.stream) === 1,
    status: num(row.status),
    outcome: String(row.outcome) as UsageRecord["outcome"],
    rule: text(row.rule),
    prompt_tokens: num(row.prompt_tokens),
    completion_tokens: num(row.completion_tokens),
    tokens_estimated: row.tokens_estimated === true || Number(row.tokens_estimated) === 1,
    cost: num(row.cost),
    cost_input: num(row.cost_input),
    cost_cached: num(row.cost_cached),
    cost_cache_write: num(row.cost_cache_write),
    cost_output: num(row.cost_output),
    cost_reasoning: num(row.cost_reasoning),
    cost_web_search: num(row.cost_web_search),
    latency_ms: num(row.latency_ms),
    ttft_ms: row.ttft_ms === null || row.ttft_ms === undefined ? null : Number(row.ttft_ms),
    attempts: num(row.attempts),
    error_code: text(row.error_code),
    dropped: text(row.dropped),
    cache: text(row.cache),
    saved_tokens: num(row.saved_tokens),
    saved_cost: num(row.saved_cost),
    trace_id: text(row.trace_id),
    team: text(row.team),
    team_id: text(row.team_id),
    guardrails: guardrailsOf(row.guardrails),
  };
}

/** The `guardrails` column: JSON text (SQLite) or parsed already (PostgreSQL's `json`); null when none. */
function guardrailsOf(v: unknown): UsageRecord["guardrails"] {
  if (v === null || v === undefined) return null;
  if (typeof v !== "string") return boundedGuardrails(v);
  try {
    return boundedGuardrails(JSON.parse(v));
  } catch {
    return null;
  }
}
