/**
 * The usage store contract. The embedded default is SQLite (`sqlite_store.ts`); the interface is kept small
 * and async so that a networked store (PostgreSQL) can implement it later without touching the pipeline or
 * the admin API.
 *
 * @module
 */
import {
  boundedGuardrails,
  type RecordListQuery,
  type RecordPage,
  type UsageQuery,
  type UsageRecord,
  type UsageReport,
} from "./record.ts";
import type { ResponsesStore } from "./responses_store.ts";
import type { TokenStore } from "../tokens/types.ts";

/**
 * A usage record as it travels through the pipeline: the record plus `uid`, a unique id the pipeline gives
 * each record when it is written. Stores de-duplicate on `uid` so that replaying a spill file twice (after a
 * crash mid-replay) never counts a request twice. The request id is not used for that because clients may
 * choose it (`x-request-id`): keying on it would let a client hide requests by reusing one id.
 */
export type StoredUsageRecord = UsageRecord & {
  /** Unique per record; when absent the store falls back to `request_id|time`. */
  uid?: string;
};

/**
 * A record as the pipeline holds it between `write()` and the store: the caller's record object itself (not a
 * copy, so that `write()` allocates as little as possible) beside its `uid`.
 */
export interface UsageEntry {
  record: UsageRecord;
  uid: string;
}

/** The record of `entry` with its `uid`, as stores and files take it. */
export function storedOf(entry: UsageEntry): StoredUsageRecord {
  return { ...entry.record, uid: entry.uid };
}

/** One JSON line (without newline) for a spill or JSONL file; `guardrails` bounded as the stores keep it. */
export function entryLine(entry: UsageEntry): string {
  const stored = storedOf(entry);
  if (stored.guardrails != null) stored.guardrails = boundedGuardrails(stored.guardrails);
  return JSON.stringify(stored);
}

/** Where usage records are kept and queried. Every method may reject; the pipeline copes with that. */
export interface UsageStore {
  /** Stores a batch (possibly in several transactions); records whose `uid` is already stored are ignored, so retrying a batch that failed part-way is safe. */
  insert(records: readonly StoredUsageRecord[]): Promise<void>;
  /** Filters, groups and totals records for `GET /admin/usage`. Rejects with `UsageQueryError` on bad input. */
  query(q: UsageQuery): Promise<UsageReport>;
  /** One page of the request log (`GET /admin/requests`), newest first. Rejects with `UsageQueryError` on bad input. */
  listRecords(q: RecordListQuery): Promise<RecordPage>;
  /**
   * Tokens (prompt + completion) and cost of the records of the token whose identity is `tokenId` since
   * `sinceIso`, to seed budgets at startup. By identity, not name: a reissued name starts its own budget.
   */
  sumSince(tokenId: string, sinceIso: string): Promise<{ tokens: number; cost: number }>;
  /**
   * {@linkcode sumSince} for the records made under the team whose identity is `teamId` (their `team_id`: the
   * team of the request's token when it was made), to seed a team's budget: what its members spent while
   * members counts after they are revoked or move. By identity, not name: a team made, or declared in the file,
   * under a deleted team's name starts its own budget.
   */
  sumTeamSince(teamId: string, sinceIso: string): Promise<{ tokens: number; cost: number }>;
  /**
   * Deletes at most `limit` of the records older than `iso` (retention), in one statement; resolves to how
   * many were deleted. Retention calls it until fewer than `limit` come back: one statement over a large
   * backlog would outlast the store's time limit (and roll back), or hold the SQLite worker from every other
   * call while it ran.
   */
  deleteOlderThan(iso: string, limit: number): Promise<number>;
  /** Releases the store; later calls reject. Idempotent. */
  close(): Promise<void>;
}

/**
 * A usage database that also keeps stored responses (`/v1/responses`) and the tokens issued through the admin
 * API, in the same database: the SQLite store and its worker proxy, and the PostgreSQL store. `close()`
 * closes all of them.
 */
export interface UsageDatabase extends UsageStore {
  readonly responses: ResponsesStore;
  readonly tokens: TokenStore;
}

/** The dedupe key of a record: its `uid`, else `request_id|time` (stable across replays of the same line). */
export function uidOf(record: StoredUsageRecord): string {
  return typeof record.uid === "string" && record.uid !== ""
    ? record.uid
    : `${record.request_id}|${record.time}`;
}
