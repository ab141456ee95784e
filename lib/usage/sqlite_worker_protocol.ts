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

/** A call to the worker; `id` pairs it with its answer. */
export type StoreCall =
  & { id: number }
  & (
    | { method: "open"; path: string }
    | { method: "insert"; records: readonly StoredUsageRecord[] }
    | { method: "query"; query: UsageQuery }
    | { method: "listRecords"; query: RecordListQuery }
    | { method: "sumSince"; tokenId: string; since: string }
    | { method: "deleteOlderThan"; before: string }
    | { method: "close" }
    | { method: "responses.put"; record: StoredResponse }
    | { method: "responses.get"; rid: string; owner: string }
    | { method: "responses.delete"; rid: string; owner: string }
    | { method: "responses.inputItems"; rid: string; owner: string; page: ItemsPage }
    | { method: "responses.chain"; rid: string; owner: string }
    | { method: "responses.items"; ids: readonly string[]; owner: string }
    | { method: "responses.prune"; before: string }
    | { method: "tokens.loadAll" }
    | { method: "tokens.version" }
    | { method: "tokens.put"; token: StoredToken; audit: AuditEntry; basedOn?: string | null }
    | { method: "tokens.putTeam"; team: StoredTeam; audit: AuditEntry; basedOn?: string | null }
    | { method: "tokens.audit"; query: AuditQuery }
  );

/** An error as it crosses the thread boundary: enough to rebuild a `UsageQueryError` (which has `param`). */
export interface StoreFailure {
  name: string;
  message: string;
  param?: string;
}

/** The worker's answer to the call with the same `id`. */
export type StoreAnswer =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: StoreFailure };
