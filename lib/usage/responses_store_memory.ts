/**
 * Stored responses in memory: for `usage.sqlite: none` (no database to keep them in) and for tests. Lost at
 * restart, and bounded twice: past `maxResponses` records or past `maxBytes` (each record counted as the length
 * of its JSON text) a response is dropped, so a gateway without a database cannot grow without limit within
 * the retention period. The count alone did not bound it: one token sending 4 MiB inputs could fill 10,000
 * records, tens of GiB.
 *
 * Which one is dropped keeps tenants apart: the oldest put of the owner holding the most (responses when the
 * count is over, bytes when the bytes are), so one token's traffic cannot push out another token's responses
 * while it holds more than they do. A plain oldest-first list let one busy token evict every other token's
 * conversations (their chains then went on silently without their first turns).
 *
 * Records are copied in (through their JSON text, which also gives their size) and out (`structuredClone`), so a caller changing an object it put or got cannot
 * change what is stored: the same behaviour as the SQLite store, which keeps JSON text.
 *
 * Items are found by id through an index (owner and item id → the responses holding it, in put order) kept
 * in step with every put, delete, prune and drop.
 *
 * @module
 */
import type { JsonObject } from "../openai/types.ts";
import { batchLimit } from "./query.ts";
import {
  buildChain,
  cutoffSeconds,
  findItem,
  type ItemsList,
  itemSlots,
  type ItemsPage,
  pageItems,
  pageOf,
  type ResponsesStore,
  type StoredResponse,
  withItemIds,
} from "./responses_store.ts";

/** Most responses the memory store keeps by default. */
export const MAX_MEMORY_RESPONSES = 10_000;

/**
 * Most bytes (the records' JSON text) the memory store keeps by default: 256 MiB, as the response cache's
 * default `cache.max_bytes`. That holds 64 conversations at the default 4 MiB `server.max_body_size`, and the
 * 10,000 records of ordinary requests of a few KiB to 25 KiB each, so the count is what bounds everyday use and
 * the bytes bound only large inputs. A memory store is the fallback without a database, not a place to keep
 * much: `usage.sqlite` (or `postgres`) keeps stored responses for their whole retention.
 */
export const MAX_MEMORY_RESPONSE_BYTES = 256 * 1024 ** 2;

/** Options for {@linkcode createMemoryResponsesStore}. */
export interface MemoryResponsesStoreOptions {
  /**
   * Most responses kept; the oldest put of the owner holding the most goes first. Default
   * {@linkcode MAX_MEMORY_RESPONSES}.
   */
  maxResponses?: number;
  /**
   * Most bytes kept, each record counted as the length of its JSON text; the oldest put of the owner holding the
   * most bytes goes first, but the newest is always kept (so a response just answered can be chained from).
   * Default {@linkcode MAX_MEMORY_RESPONSE_BYTES}.
   */
  maxBytes?: number;
}

/** What one owner holds: its responses' ids in put order, and their bytes. */
interface Holding {
  ids: Set<string>;
  bytes: number;
}

/** A `ResponsesStore` in a `Map`, in put order. */
export function createMemoryResponsesStore(options: MemoryResponsesStoreOptions = {}): ResponsesStore {
  const max = Math.max(1, options.maxResponses ?? MAX_MEMORY_RESPONSES);
  const maxBytes = options.maxBytes ?? MAX_MEMORY_RESPONSE_BYTES;
  const byId = new Map<string, StoredResponse>();
  /** Each record's size (its JSON text's length), and their sum. */
  const sizes = new Map<string, number>();
  let bytes = 0;
  /** Each owner's holding, for dropping from the one holding the most (see the module's doc). */
  const holdings = new Map<string, Holding>();
  /** `owner NUL item id` → the ids of that owner's responses holding the item, in put order. */
  const itemIndex = new Map<string, Set<string>>();
  const itemKey = (owner: string, itemId: string) => `${owner}\u0000${itemId}`;
  const owned = (id: string, owner: string): StoredResponse | null => {
    const record = byId.get(id);
    return record !== undefined && record.owner === owner ? record : null;
  };
  const index = (record: StoredResponse) => {
    for (const { id } of itemSlots(record)) {
      const key = itemKey(record.owner, id);
      const holders = itemIndex.get(key) ?? new Set<string>();
      holders.delete(record.id); // re-added last: the newest put holds it
      holders.add(record.id);
      itemIndex.set(key, holders);
    }
  };
  const remove = (id: string): boolean => {
    const record = byId.get(id);
    if (record === undefined) return false;
    for (const slot of itemSlots(record)) {
      const key = itemKey(record.owner, slot.id);
      const holders = itemIndex.get(key);
      holders?.delete(id);
      if (holders?.size === 0) itemIndex.delete(key);
    }
    const size = sizes.get(id) ?? 0;
    bytes -= size;
    sizes.delete(id);
    const holding = holdings.get(record.owner)!;
    holding.ids.delete(id);
    holding.bytes -= size;
    if (holding.ids.size === 0) holdings.delete(record.owner);
    return byId.delete(id);
  };
  /**
   * The oldest put of the owner holding the most responses (`byCount`) or bytes, never `keep` (the response just
   * put: always kept, so it can be chained from); undefined when there is no other. One pass over the owners,
   * each put that overflows: their number is the tokens that store responses.
   */
  const victim = (byCount: boolean, keep: string): string | undefined => {
    let most: Holding | undefined;
    let size = -1;
    for (const holding of holdings.values()) {
      const held = byCount ? holding.ids.size : holding.bytes;
      const only = holding.ids.size === 1 && holding.ids.has(keep);
      if (!only && held > size) most = holding, size = held;
    }
    if (most === undefined) return undefined;
    for (const id of most.ids) if (id !== keep) return id;
  };
  const item = (itemId: string, owner: string): JsonObject | null => {
    const holders = [...itemIndex.get(itemKey(owner, itemId)) ?? []];
    for (let i = holders.length - 1; i >= 0; i--) {
      const record = owned(holders[i], owner);
      const found = record === null ? null : findItem(record, itemId);
      if (found !== null) return found;
    }
    return null;
  };

  return {
    put(record) {
      const existing = byId.get(record.id);
      if (existing !== undefined && existing.owner !== record.owner) return Promise.resolve();
      // Through JSON (as the SQLite store keeps it): a copy the caller cannot change, and its size.
      const text = JSON.stringify({
        ...record,
        upstream_id: record.upstream_id ?? null,
        input_items: withItemIds(record.input_items),
      });
      const copy = JSON.parse(text) as StoredResponse;
      remove(record.id); // a replaced record moves to the end: it is the newest put
      byId.set(record.id, copy);
      sizes.set(record.id, text.length);
      bytes += text.length;
      const holding = holdings.get(record.owner) ?? { ids: new Set<string>(), bytes: 0 };
      holding.ids.add(record.id);
      holding.bytes += text.length;
      holdings.set(record.owner, holding);
      index(copy);
      while (byId.size > max || bytes > maxBytes) {
        const id = victim(byId.size > max, record.id);
        if (id === undefined) break;
        remove(id);
      }
      return Promise.resolve();
    },
    get(id, owner) {
      const record = owned(id, owner);
      return Promise.resolve(record === null ? null : structuredClone(record));
    },
    delete(id, owner) {
      return Promise.resolve(owned(id, owner) !== null && remove(id));
    },
    inputItems(id, owner, page: ItemsPage): Promise<ItemsList | null> {
      try {
        pageOf(page); // a bad page is refused whether or not the response exists
        const record = owned(id, owner);
        return Promise.resolve(record === null ? null : structuredClone(pageItems(record.input_items, page)));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    chain(id, owner) {
      try {
        const conversation = buildChain(id, owner, owned);
        return Promise.resolve(conversation === null ? null : structuredClone(conversation));
      } catch (e) {
        return Promise.reject(e); // a conversation too long to rebuild
      }
    },
    items(ids, owner) {
      return Promise.resolve(ids.map((id) => {
        const found = item(id, owner);
        return found === null ? null : structuredClone(found);
      }));
    },
    prune(beforeIso, limit) {
      try {
        const cutoff = cutoffSeconds(beforeIso);
        const most = batchLimit(limit);
        let deleted = 0;
        for (const [id, record] of byId) {
          if (deleted >= most) break;
          if (record.created_at < cutoff && remove(id)) deleted++;
        }
        return Promise.resolve(deleted);
      } catch (e) {
        return Promise.reject(e);
      }
    },
  };
}
