/**
 * The rules every token store follows, so that memory, SQLite and PostgreSQL answer alike:
 *
 * - The audit trail is newest first by the entry's time, ties broken by the order the entries were appended
 *   (a later append is newer), and `after` (an entry id) continues with the entries older than that one; one
 *   naming no entry is an `AuditCursorError`, never an empty last page. The SQL stores say the same in SQL
 *   (`store_sql.ts`); the memory store uses {@linkcode pageAudit}.
 * - A put drops every secret whose grace has ended (of any token), so hashes that can no longer
 *   authenticate are not kept.
 *
 * @module
 */
import {
  AuditCursorError,
  type AuditEntry,
  type AuditPage,
  type AuditQuery,
  type TokenSecret,
} from "./types.ts";

/** An audit entry with the position it was appended at, which breaks ties between equal times. */
export interface SequencedAuditEntry {
  readonly seq: number;
  readonly timeMs: number;
  readonly entry: AuditEntry;
}

/**
 * Milliseconds since the epoch of an ISO time; throws a `RangeError` naming `field` when it is not one, so a
 * store never silently ignores a filter it could not read (the admin API validates before it gets here).
 */
export function isoToMs(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw new RangeError(`${field} is not an ISO time: '${iso}'`);
  return ms;
}

/** Newer first: compare by time, then by append order. */
export function newerFirst(a: SequencedAuditEntry, b: SequencedAuditEntry): number {
  return b.timeMs - a.timeMs || b.seq - a.seq;
}

/** The page of `entries` (any order) that `query` asks for. An unknown `after` id gives an empty page. */
export function pageAudit(entries: readonly SequencedAuditEntry[], query: AuditQuery): AuditPage {
  const fromMs = query.from === undefined ? null : isoToMs(query.from, "from");
  const toMs = query.to === undefined ? null : isoToMs(query.to, "to");
  let cursor: SequencedAuditEntry | null = null;
  if (query.after !== undefined) {
    cursor = entries.find((e) => e.entry.id === query.after) ?? null;
    if (cursor === null) throw new AuditCursorError(query.after);
  }
  const matching = entries.filter(({ entry, timeMs, seq }) =>
    (query.token === undefined || entry.token_id === query.token || entry.token_name === query.token) &&
    (query.actor === undefined || entry.actor === query.actor) &&
    (query.action === undefined || entry.action === query.action) &&
    (fromMs === null || timeMs >= fromMs) &&
    (toMs === null || timeMs < toMs) &&
    (cursor === null || timeMs < cursor.timeMs || (timeMs === cursor.timeMs && seq < cursor.seq))
  ).sort(newerFirst);
  const limit = clampLimit(query.limit);
  return { entries: matching.slice(0, limit).map((e) => e.entry), has_more: matching.length > limit };
}

/** `limit` held to 1–1000, so a store never answers an unbounded page. */
export function clampLimit(limit: number): number {
  return Math.min(1000, Math.max(1, Math.trunc(Number.isFinite(limit) ? limit : 100)));
}

/** The secrets a put keeps: those without an end, or whose end is after `nowMs`, in their order. */
export function liveSecrets(secrets: readonly TokenSecret[], nowMs: number): TokenSecret[] {
  return secrets.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > nowMs);
}
