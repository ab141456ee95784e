/**
 * Stored responses in PostgreSQL (`postgres:` configured): the `responses` and `response_items` tables of
 * schema migration 2 (`postgres_schema.ts`), shared by every replica, so a `previous_response_id` works
 * whichever replica gets the next turn. Paging and the chain are laid out by `responses_store.ts`, as in the
 * SQLite and memory stores, so all three answer alike.
 *
 * - The chain is fetched in one round trip (a recursive query along `previous_response_id`, the token's rows
 *   only), then laid out by `buildChain`.
 * - Items are looked up through `response_items` (by token and item id, the newest put first); deleting or
 *   pruning a response removes its items by the foreign key's cascade, in the same statement. Retention prunes
 *   in batches, each its own statement within the store's time limit.
 * - While PostgreSQL is unreachable every call fails with a 503 `store_unavailable` (with `Retry-After`), not
 *   a 500 and not a 404: the response may well exist. A failed put is logged by the handler and the client
 *   keeps its answer (the response is then not stored).
 * - A database that stalls costs one call per probe interval its `postgres.timeout`, not every call: after a
 *   call fails for the connection's sake (a timeout, a refused or cut connection), the others fail at once
 *   with the same 503 but for one per interval, which tries the database again (`timers/store_breaker.ts`, the
 *   counters' rule). A `/v1/responses` answer is then answered at once, not stored, rather than held for the
 *   timeout, and a lookup (`previous_response_id`, `GET`) gets its 503 at once. An error the database itself
 *   reports about a statement is an answer: the store is up. The handler logs only the puts that tried the
 *   database (`StoreNotTried`): one line per probe while it is down, not one per request.
 *
 * @module
 */
import { GatewayError } from "../errors.ts";
import type { JsonObject } from "../openai/types.ts";
import { isConnectionFailure, type PostgresClient } from "./postgres_schema.ts";
import { createStoreBreaker, type StoreBreakerOptions, StoreNotTried } from "../timers/store_breaker.ts";
import { batchLimit, UsageQueryError } from "./query.ts";
import {
  buildChain,
  cutoffSeconds,
  itemSlots,
  MAX_CHAIN,
  MAX_CHAIN_BYTES,
  pageItems,
  pageOf,
  type ResponsesStore,
  type StoredResponse,
  withItemIds,
} from "./responses_store.ts";

/** Seconds a client is asked to wait after a `store_unavailable`. */
const RETRY_AFTER_S = 2;

/** Runs one store call with the store's time limit (and its closed check). */
export type PostgresCall = <T>(what: string, fn: (sql: PostgresClient) => Promise<T>) => Promise<T>;

/** The 503 a stored-response call answers while the database is unreachable or failing. */
export function responsesStoreUnavailable(cause: unknown): GatewayError {
  return new GatewayError(503, "The response store is unavailable right now. Please try again shortly.", {
    type: "server_error",
    code: "store_unavailable",
    headers: { "retry-after": String(RETRY_AFTER_S) },
    cause,
  });
}

const COLUMNS =
  `id, owner, environment, created_at, alias, provider, native, upstream_id, previous_response_id,
  input_items::text AS input_items, response::text AS response`;

/**
 * The `ResponsesStore` over a migrated pool; `call` bounds each call. `probe` sets how calls try a database
 * that failed (its interval and clock; default: the counters', `STORE_PROBE_INTERVAL_MS`).
 */
export function createPostgresResponsesStore(
  call: PostgresCall,
  probe: StoreBreakerOptions = {},
): ResponsesStore {
  const breaker = createStoreBreaker(probe);
  /** `call`, with database failures as 503s; a bad page (`UsageQueryError`) stays the client's 400. */
  const guarded = async <T>(what: string, fn: (sql: PostgresClient) => Promise<T>): Promise<T> => {
    if (!breaker.tryNow()) throw responsesStoreUnavailable(new StoreNotTried(`PostgreSQL ${what}`));
    try {
      const value = await call(what, fn);
      breaker.succeeded();
      return value;
    } catch (err) {
      if (err instanceof UsageQueryError || err instanceof GatewayError) throw err;
      // The database's own answer about a statement says it is there; a timeout or a lost connection does not.
      if (isConnectionFailure(err)) breaker.failed();
      else breaker.succeeded();
      throw responsesStoreUnavailable(err);
    }
  };
  const owned = async (sql: PostgresClient, id: string, owner: string): Promise<StoredResponse | null> => {
    const [row] = await sql.unsafe(`SELECT ${COLUMNS} FROM responses WHERE id = $1 AND owner = $2`, [
      id,
      owner,
    ]);
    return row === undefined ? null : recordOf(row);
  };

  return {
    put(record) {
      return guarded("response put", async (sql) => {
        const inputItems = withItemIds(record.input_items);
        await sql.begin(async (tx) => {
          // A put never takes over another token's id (ids are the gateway's, so this is defence, not a path).
          const changed = await tx.unsafe(
            `INSERT INTO responses (id, owner, environment, created_at, alias, provider, native, upstream_id,
               previous_response_id, input_items, response)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::json, $11::text::json)
             ON CONFLICT (id) DO UPDATE SET environment = excluded.environment,
               created_at = excluded.created_at, alias = excluded.alias, provider = excluded.provider,
               native = excluded.native, upstream_id = excluded.upstream_id,
               previous_response_id = excluded.previous_response_id, input_items = excluded.input_items,
               response = excluded.response
             WHERE responses.owner = excluded.owner`,
            [
              record.id,
              record.owner,
              record.environment,
              record.created_at,
              record.alias,
              record.provider,
              record.native,
              record.upstream_id ?? null,
              record.previous_response_id,
              JSON.stringify(inputItems),
              JSON.stringify(record.response),
            ],
          );
          if (changed.count === 0) return; // another token's id: left as it was
          await tx.unsafe("DELETE FROM response_items WHERE response_id = $1", [record.id]);
          const slots = itemSlots({ input_items: inputItems, response: record.response });
          if (slots.length === 0) return;
          const params: (string | number | boolean)[] = [];
          const tuples = slots.map((slot) => {
            const at = params.length;
            params.push(record.owner, slot.id, record.id, slot.output, slot.position);
            return `($${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5})`;
          });
          await tx.unsafe(
            `INSERT INTO response_items (owner, item_id, response_id, output, position) VALUES ${
              tuples.join(", ")
            }`,
            params,
            { prepare: false },
          );
        });
      });
    },
    get(id, owner) {
      return guarded("response get", (sql) => owned(sql, id, owner));
    },
    delete(id, owner) {
      return guarded("response delete", async (sql) => {
        const result = await sql.unsafe("DELETE FROM responses WHERE id = $1 AND owner = $2", [id, owner]);
        return result.count > 0;
      });
    },
    inputItems(id, owner, page) {
      return guarded("response input items", async (sql) => {
        pageOf(page); // a bad page is refused whether or not the response exists
        const record = await owned(sql, id, owner);
        return record === null ? null : pageItems(record.input_items, page);
      });
    },
    chain(id, owner) {
      return guarded("response chain", async (sql) => {
        // One past each bound, so that `buildChain` sees a chain too long (or looping, or over its bytes) and
        // refuses it; no more. `bytes` is `linkBytes` as the database counts it: the stored JSON text is what
        // `JSON.stringify` wrote, and `length` counts characters, never more than JavaScript's UTF-16 units, so
        // the query never stops before `buildChain` would.
        const rows = await sql.unsafe(
          `WITH RECURSIVE link (id, previous_response_id, depth, bytes) AS (
             SELECT id, previous_response_id, 1,
               length(input_items::text)::bigint + length(response::text)
             FROM responses WHERE id = $1 AND owner = $2
             UNION ALL
             SELECT r.id, r.previous_response_id, link.depth + 1,
               link.bytes + length(r.input_items::text) + length(r.response::text)
             FROM responses r JOIN link ON r.id = link.previous_response_id AND r.owner = $2
             WHERE link.depth <= $3 AND link.bytes <= $4
           )
           SELECT ${COLUMNS} FROM responses WHERE owner = $2 AND id IN (SELECT id FROM link)`,
          [id, owner, MAX_CHAIN, MAX_CHAIN_BYTES],
        );
        const byId = new Map(rows.map((row) => [String(row.id), recordOf(row)]));
        return buildChain(id, owner, (link, linkOwner) => {
          const found = byId.get(link);
          return found !== undefined && found.owner === linkOwner ? found : null;
        });
      });
    },
    items(ids, owner) {
      return guarded("response items", async (sql) => {
        if (ids.length === 0) return [];
        const rows = await sql.unsafe(
          // `->` decodes every string of the document, and fails on the escapes text cannot hold (`\u0000`, a
          // lone surrogate) that a client's input may have put there: such a document (it has a `\u`) is sent
          // whole and cut here instead (`itemOf`).
          `SELECT DISTINCT ON (i.item_id) i.item_id, i.output, i.position,
             CASE WHEN strpos(d.doc::text, chr(92) || 'u') = 0 THEN (CASE WHEN i.output
               THEN d.doc -> 'output' -> i.position ELSE d.doc -> i.position END)::text END AS item,
             CASE WHEN strpos(d.doc::text, chr(92) || 'u') > 0 THEN d.doc::text END AS whole
           FROM response_items i JOIN responses r ON r.id = i.response_id AND r.owner = i.owner
             CROSS JOIN LATERAL (SELECT CASE WHEN i.output THEN r.response ELSE r.input_items END AS doc) d
           WHERE i.owner = $1 AND i.item_id IN (SELECT json_array_elements_text($2::json))
           ORDER BY i.item_id, i.seq DESC`,
          // The ids as a JSON parameter (serialized by the client for json): it does not fetch array types (see
          // connectPostgres), so a text[] parameter would not be sent as one.
          [owner, [...new Set(ids)]],
        );
        const found = new Map<string, JsonObject>();
        for (const row of rows) {
          const item = itemOf(row);
          if (item !== null) found.set(String(row.item_id), item);
        }
        return ids.map((id) => found.get(id) ?? null);
      });
    },
    prune(beforeIso, limit) {
      return guarded("response prune", async (sql) => {
        const cutoff = cutoffSeconds(beforeIso);
        // At most `limit` responses a statement (their items go with them, by the cascade): one statement over
        // a large backlog outlasted `postgres.timeout`, rolled back and deleted nothing, run after run.
        const result = await sql.unsafe(
          "DELETE FROM responses WHERE ctid IN (SELECT ctid FROM responses WHERE created_at < $1 LIMIT $2)",
          [cutoff, batchLimit(limit)],
        );
        return result.count;
      });
    },
  };
}

/** The item of an `items` row: cut out by PostgreSQL (`item`), or here from its whole document (`whole`). */
function itemOf(row: Record<string, unknown>): JsonObject | null {
  if (typeof row.item === "string") return JSON.parse(row.item) as JsonObject;
  if (typeof row.whole !== "string") return null;
  const doc = JSON.parse(row.whole) as JsonObject | JsonObject[];
  const list = row.output === true ? (doc as JsonObject).output : doc;
  const item = Array.isArray(list) ? list[Number(row.position)] : undefined;
  return typeof item === "object" && item !== null && !Array.isArray(item) ? item as JsonObject : null;
}

function recordOf(row: Record<string, unknown>): StoredResponse {
  return {
    id: String(row.id),
    owner: String(row.owner),
    environment: String(row.environment),
    created_at: Number(row.created_at),
    alias: String(row.alias),
    provider: String(row.provider),
    native: row.native === true,
    upstream_id: row.upstream_id == null ? null : String(row.upstream_id),
    previous_response_id: row.previous_response_id == null ? null : String(row.previous_response_id),
    input_items: JSON.parse(String(row.input_items)) as JsonObject[],
    response: JSON.parse(String(row.response)) as JsonObject,
  };
}
