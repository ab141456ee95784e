/**
 * The messages between the usage store's proxy on the request thread (`sqlite_worker_store.ts`) and the
 * worker that owns the database (`sqlite_worker.ts`): one call per `UsageStore` method, per `ResponsesStore`
 * method (those named `responses.*`) and per `TokenStore` method but `close` (`tokens.*`), answered by id.
 *
 * @module
 */
import type { RecordListQuery, UsageQuery } from "./record.ts";
import type { StoredUsageRecord } from "./store.ts";
import type { ItemsPage, StoredResponse } from "./responses_store.ts";
import type { AuditEntry, AuditQuery, StoredTeam, StoredToken } from "../tokens/types.ts";

/**
 * Usage records as one JSON array. A string crosses the thread boundary as one copy, where a structured clone
 * walks every field of every record on the request thread: in parts of 50, 3.3–5.5 µs per record cloned and
 * 1.1–2.4 µs as JSON (stringify included) on Bun; on Deno about the same either way (2.2–2.7 against 2.3–3.2
 * µs). The records survive the trip unchanged: they hold only strings, finite numbers, booleans and nulls (the
 * store writes a non-finite number as 0 or null, which is what JSON makes of it), and the spill file keeps them
 * as JSON too.
 */
export type RecordsJson = string & { readonly __recordsJson: never };

/** `records` as {@linkcode RecordsJson}. */
export function recordsJson(records: readonly StoredUsageRecord[]): RecordsJson {
  return JSON.stringify(records) as RecordsJson;
}

/** The records of a {@linkcode RecordsJson}. */
export function recordsOf(json: RecordsJson): StoredUsageRecord[] {
  return JSON.parse(json) as StoredUsageRecord[];
}

/** A call to the worker; `id` pairs it with its answer. */
export type StoreCall =
  & { id: number }
  & (
    | { method: "open"; path: string }
    /** Part of batch `batch` ({@linkcode RecordsJson}), kept by the worker until the batch's `insert`. */
    | { method: "stage"; batch: number; records: RecordsJson }
    /** The last part of batch `batch`, after `staged` records sent with `stage`: the batch is committed whole. */
    | { method: "insert"; batch: number; staged: number; records: RecordsJson }
    | { method: "query"; query: UsageQuery }
    | { method: "listRecords"; query: RecordListQuery }
    | { method: "sumSince"; tokenId: string; since: string }
    | { method: "sumTeamSince"; teamId: string; since: string }
    | { method: "deleteOlderThan"; before: string; limit: number }
    | { method: "close" }
    | { method: "responses.put"; record: StoredResponse }
    | { method: "responses.get"; rid: string; owner: string }
    | { method: "responses.delete"; rid: string; owner: string }
    | { method: "responses.inputItems"; rid: string; owner: string; page: ItemsPage }
    | { method: "responses.chain"; rid: string; owner: string }
    | { method: "responses.items"; ids: readonly string[]; owner: string }
    | { method: "responses.prune"; before: string; limit: number }
    | { method: "tokens.loadAll" }
    | { method: "tokens.version" }
    | { method: "tokens.put"; token: StoredToken; audit: AuditEntry; basedOn?: string | null; joins?: string }
    | { method: "tokens.putTeam"; team: StoredTeam; audit: AuditEntry; basedOn?: string | null }
    | { method: "tokens.audit"; query: AuditQuery }
  );

/**
 * An error as it crosses the thread boundary: enough to rebuild a `UsageQueryError` (which has `param`) and a
 * `TeamHasMembersError` (which has `members`).
 */
export interface StoreFailure {
  name: string;
  message: string;
  param?: string;
  members?: string[];
}

/** The worker's answer to the call with the same `id`. */
export type StoreAnswer =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: StoreFailure };

/**
 * The worker's side of a batch sent in parts (`stage`, then `insert`): the parts are kept until the last one
 * arrives, and the batch is inserted whole. One batch at a time (the pipeline inserts one at a time); a part of
 * another batch starts over. A batch whose parts did not all arrive (a worker restarted part-way has none of
 * the earlier ones) is refused, so the pipeline retries all of it rather than storing a piece.
 */
export class BatchStaging {
  #batch = 0;
  #records: StoredUsageRecord[] = [];

  /** Keeps `records` as the next part of `batch`; returns how many of its records are kept. */
  stage(batch: number, records: readonly StoredUsageRecord[]): number {
    if (batch !== this.#batch) {
      this.#batch = batch;
      this.#records = [];
    }
    for (const record of records) this.#records.push(record);
    return this.#records.length;
  }

  /** Batch `batch` whole, its `staged` records kept so far then `last`; throws when parts are missing. */
  whole(batch: number, staged: number, last: readonly StoredUsageRecord[]): readonly StoredUsageRecord[] {
    const parts = batch === this.#batch ? this.#records : [];
    this.#batch = 0;
    this.#records = [];
    if (parts.length !== staged) {
      throw new Error(`usage batch incomplete: ${parts.length} of its first ${staged} records arrived`);
    }
    return parts.length === 0 ? last : parts.concat(last);
  }
}
