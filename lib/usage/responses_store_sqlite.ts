/**
 * Stored responses in the usage database: a `responses` table in the same SQLite file as the usage records
 * (added by schema migration 2 in `sqlite_store.ts`), on the same connection, so the server reaches it through
 * the usage store's worker (`sqlite_worker.ts`) and the request thread never waits on SQLite.
 *
 * One row per response; the input items and the Response object are JSON text (they are only ever read
 * whole), and paging and the chain are laid out in TypeScript by `responses_store.ts`, as the in-memory store
 * does. The chain is followed inside one call, so a long conversation costs one round trip to the worker.
 *
 * Item references are looked up through `response_items` (schema migration 3): one row per item id of a
 * stored response, indexed by token and item id, pointing at the item's place in that response. Every put,
 * delete and prune batch changes both tables in one transaction, so the index never names a response that is
 * gone.
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import type { JsonObject } from "../openai/types.ts";
import {
  buildChain,
  cutoffSeconds,
  itemSlots,
  pageItems,
  pageOf,
  type ResponsesStore,
  type StoredResponse,
  withItemIds,
} from "./responses_store.ts";
import { batchLimit } from "./query.ts";
import { run } from "./sqlite_calls.ts";

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
 * Schema migration 3: the item index (`response_items`, looked up by token and item id; `response_id` is
 * indexed for deletes and retention) and `responses.upstream_id` (a native upstream's own response id). The
 * items of responses stored under schema 2 are indexed here, so they can be referenced too.
 */
export const RESPONSE_ITEMS_SQL = `ALTER TABLE responses ADD COLUMN upstream_id TEXT;
     CREATE TABLE response_items (
       token TEXT NOT NULL,
       item_id TEXT NOT NULL,
       response_id TEXT NOT NULL,
       output INTEGER NOT NULL,
       position INTEGER NOT NULL
     );
     CREATE INDEX response_items_lookup ON response_items (token, item_id);
     CREATE INDEX response_items_response ON response_items (response_id);
     INSERT INTO response_items (token, item_id, response_id, output, position)
       SELECT r.token, json_extract(r.input_items, e.fullkey || '.id'), r.id, 0, e.key
       FROM responses r, json_each(r.input_items) e
       WHERE json_type(r.input_items, e.fullkey || '.id') = 'text'
         AND json_extract(r.input_items, e.fullkey || '.id') <> ''
       UNION ALL
       SELECT r.token, json_extract(r.response, e.fullkey || '.id'), r.id, 1, e.key
       FROM responses r, json_each(r.response, '$.output') e
       WHERE json_type(r.response, e.fullkey || '.id') = 'text'
         AND json_extract(r.response, e.fullkey || '.id') <> '';`;

/**
 * The `ResponsesStore` over an open, migrated usage database. `open` throws once the database is closed; the
 * usage store that owns `db` closes it.
 */
export function createSqliteResponsesStore(db: DatabaseSync, open: () => void): ResponsesStore {
  // A put never takes over another token's id (ids are the gateway's, so this is defence, not a path).
  const putStmt = db.prepare(
    `INSERT INTO responses (id, owner, environment, created_at, alias, provider, native, upstream_id,
       previous_response_id, input_items, response)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET environment = excluded.environment, created_at = excluded.created_at,
       alias = excluded.alias, provider = excluded.provider, native = excluded.native,
       upstream_id = excluded.upstream_id, previous_response_id = excluded.previous_response_id,
       input_items = excluded.input_items, response = excluded.response
     WHERE responses.owner = excluded.owner`,
  );
  const getStmt = db.prepare("SELECT * FROM responses WHERE id = ? AND owner = ?");
  const deleteStmt = db.prepare("DELETE FROM responses WHERE id = ? AND owner = ?");
  // A prune's batch: the oldest `limit` responses before the cut-off, in one order (the `created_at` index's,
  // rowid within a time), so that the items' delete and the responses' delete pick the same ones.
  const batch = "SELECT rowid FROM responses WHERE created_at < ? ORDER BY created_at, rowid LIMIT ?";
  const pruneStmt = db.prepare(`DELETE FROM responses WHERE rowid IN (${batch})`);
  const unindexStmt = db.prepare("DELETE FROM response_items WHERE response_id = ?");
  const indexStmt = db.prepare(
    "INSERT INTO response_items (owner, item_id, response_id, output, position) VALUES (?, ?, ?, ?, ?)",
  );
  const pruneItemsStmt = db.prepare(
    `DELETE FROM response_items WHERE response_id IN (SELECT id FROM responses WHERE rowid IN (${batch}))`,
  );
  // The newest put wins when several of the token's responses hold the id (its rows are inserted last). The
  // item is cut out of its response's JSON by SQLite, so only the item crosses into JavaScript.
  const itemStmt = db.prepare(
    `SELECT CASE WHEN i.output = 1 THEN json_extract(r.response, '$.output[' || i.position || ']')
       ELSE json_extract(r.input_items, '$[' || i.position || ']') END AS item
     FROM response_items i JOIN responses r ON r.id = i.response_id AND r.owner = i.owner
     WHERE i.owner = ? AND i.item_id = ?
     ORDER BY i.rowid DESC LIMIT 1`,
  );

  const owned = (id: string, owner: string): StoredResponse | null => {
    const row = getStmt.get(id, owner) as Record<string, unknown> | undefined;
    return row === undefined ? null : recordOf(row);
  };

  return {
    put(record) {
      return run(() => {
        open();
        const inputItems = withItemIds(record.input_items);
        transaction(db, () => {
          const changed = putStmt.run(
            record.id,
            record.owner,
            record.environment,
            record.created_at,
            record.alias,
            record.provider,
            record.native ? 1 : 0,
            record.upstream_id ?? null,
            record.previous_response_id,
            JSON.stringify(inputItems),
            JSON.stringify(record.response),
          ).changes;
          if (Number(changed) === 0) return; // another token's id: left as it was
          unindexStmt.run(record.id);
          for (const slot of itemSlots({ input_items: inputItems, response: record.response })) {
            indexStmt.run(record.owner, slot.id, record.id, slot.output ? 1 : 0, slot.position);
          }
        });
      });
    },
    get(id, owner) {
      return run(() => {
        open();
        return owned(id, owner);
      });
    },
    delete(id, owner) {
      return run(() => {
        open();
        return transaction(db, () => {
          if (Number(deleteStmt.run(id, owner).changes) === 0) return false;
          unindexStmt.run(id);
          return true;
        });
      });
    },
    inputItems(id, owner, page) {
      return run(() => {
        open();
        pageOf(page); // a bad page is refused whether or not the response exists
        const record = owned(id, owner);
        return record === null ? null : pageItems(record.input_items, page);
      });
    },
    chain(id, owner) {
      return run(() => {
        open();
        return buildChain(id, owner, owned);
      });
    },
    items(ids, owner) {
      return run(() => {
        open();
        return ids.map((id) => {
          const row = itemStmt.get(owner, id) as Record<string, unknown> | undefined;
          return typeof row?.item === "string" ? JSON.parse(row.item) as JsonObject : null;
        });
      });
    },
    prune(beforeIso, limit) {
      return run(() => {
        open();
        const cutoff = cutoffSeconds(beforeIso);
        const most = batchLimit(limit);
        // One batch, both tables, one transaction: the index never names a response that is gone, and the
        // worker's other calls run between batches.
        return transaction(db, () => {
          pruneItemsStmt.run(cutoff, most);
          return Number(pruneStmt.run(cutoff, most).changes);
        });
      });
    },
  };
}

/** Runs `fn` in one transaction: all of its writes, or (when it throws) none. */
function transaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  try {
    const value = fn();
    db.exec("COMMIT");
    return value;
  } catch (e) {
    try {
      db.exec("ROLLBACK");
    } catch {
      // no transaction open (a failed COMMIT may already have ended it): nothing to undo
    }
    throw e;
  }
}

function recordOf(row: Record<string, unknown>): StoredResponse {
  return {
    id: String(row.id),
    owner: String(row.owner),
    environment: String(row.environment),
    created_at: Number(row.created_at),
    alias: String(row.alias),
    provider: String(row.provider),
    native: Number(row.native) === 1,
    upstream_id: row.upstream_id == null ? null : String(row.upstream_id),
    previous_response_id: row.previous_response_id == null ? null : String(row.previous_response_id),
    input_items: JSON.parse(String(row.input_items)) as JsonObject[],
    response: JSON.parse(String(row.response)) as JsonObject,
  };
}
