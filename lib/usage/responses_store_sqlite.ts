/**
 * Stored responses in the usage database: a `responses` table in the same SQLite file as the usage records
 * (added by schema migration 2 in `sqlite_store.ts`), on the same connection, so the server reaches it through
 * the usage store's worker (`sqlite_worker.ts`) and the request thread never waits on SQLite.
 *
 * One row per response; the input items and the Response object are JSON text (they are only ever read
 * whole), and paging and the chain are laid out in TypeScript by `responses_store.ts`, as the in-memory store
 * does. The chain is followed inside one call, so a long conversation costs one round trip to the worker.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import type { JsonObject } from "../openai/types.ts";
import {
  buildChain,
  cutoffSeconds,
  pageItems,
  pageOf,
  type ResponsesStore,
  type StoredResponse,
  withItemIds,
} from "./responses_store.ts";

/**
 * Schema migration 2: the `responses` table. `id` is the primary key (the lookups); `created_at` (Unix
 * seconds) is indexed for retention.
 */
export const RESPONSES_TABLE_SQL = `CREATE TABLE responses (
       id TEXT NOT NULL PRIMARY KEY,
       token TEXT NOT NULL,
       environment TEXT NOT NULL,
       created_at REAL NOT NULL,
       alias TEXT NOT NULL,
       provider TEXT NOT NULL,
       native INTEGER NOT NULL,
       previous_response_id TEXT,
       input_items TEXT NOT NULL,
       response TEXT NOT NULL
     );
     CREATE INDEX responses_created_at ON responses (created_at);`;

/**
 * The `ResponsesStore` over an open, migrated usage database. `open` throws once the database is closed; the
 * usage store that owns `db` closes it.
 */
export function createSqliteResponsesStore(db: DatabaseSync, open: () => void): ResponsesStore {
  // A put never takes over another token's id (ids are the gateway's, so this is defence, not a path).
  const putStmt = db.prepare(
    `INSERT INTO responses (id, token, environment, created_at, alias, provider, native, previous_response_id,
       input_items, response)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET environment = excluded.environment, created_at = excluded.created_at,
       alias = excluded.alias, provider = excluded.provider, native = excluded.native,
       previous_response_id = excluded.previous_response_id, input_items = excluded.input_items,
       response = excluded.response
     WHERE responses.token = excluded.token`,
  );
  const getStmt = db.prepare("SELECT * FROM responses WHERE id = ? AND token = ?");
  const deleteStmt = db.prepare("DELETE FROM responses WHERE id = ? AND token = ?");
  const pruneStmt = db.prepare("DELETE FROM responses WHERE created_at < ?");

  const owned = (id: string, token: string): StoredResponse | null => {
    const row = getStmt.get(id, token) as Record<string, unknown> | undefined;
    return row === undefined ? null : recordOf(row);
  };

  return {
    put(record) {
      return run(() => {
        open();
        putStmt.run(
          record.id,
          record.token,
          record.environment,
          record.created_at,
          record.alias,
          record.provider,
          record.native ? 1 : 0,
          record.previous_response_id,
          JSON.stringify(withItemIds(record.input_items)),
          JSON.stringify(record.response),
        );
      });
    },
    get(id, token) {
      return run(() => {
        open();
        return owned(id, token);
      });
    },
    delete(id, token) {
      return run(() => {
        open();
        return Number(deleteStmt.run(id, token).changes) > 0;
      });
    },
    inputItems(id, token, page) {
      return run(() => {
        open();
        pageOf(page); // a bad page is refused whether or not the response exists
        const record = owned(id, token);
        return record === null ? null : pageItems(record.input_items, page);
      });
    },
    chain(id, token) {
      return run(() => {
        open();
        return buildChain(id, token, owned);
      });
    },
    prune(beforeIso) {
      return run(() => {
        open();
        return Number(pruneStmt.run(cutoffSeconds(beforeIso)).changes);
      });
    },
  };
}

/** Runs a synchronous database call as a promise, so a throw becomes a rejection as the interface promises. */
function run<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
}

function recordOf(row: Record<string, unknown>): StoredResponse {
  return {
    id: String(row.id),
    token: String(row.token),
    environment: String(row.environment),
    created_at: Number(row.created_at),
    alias: String(row.alias),
    provider: String(row.provider),
    native: Number(row.native) === 1,
    previous_response_id: row.previous_response_id == null ? null : String(row.previous_response_id),
    input_items: JSON.parse(String(row.input_items)) as JsonObject[],
    response: JSON.parse(String(row.response)) as JsonObject,
  };
}
