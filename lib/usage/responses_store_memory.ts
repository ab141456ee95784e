/**
 * Stored responses in memory: for `usage.sqlite: none` (no database to keep them in) and for tests. Lost at
 * restart, and bounded: past `maxResponses` the oldest put is dropped, so a gateway without a database cannot
 * grow without limit within the retention period.
 *
 * Records are copied in and out (`structuredClone`), so a caller changing an object it put or got cannot
 * change what is stored: the same behaviour as the SQLite store, which keeps JSON text.
 *
 * @module
 */
import {
  buildChain,
  cutoffSeconds,
  type ItemsList,
  type ItemsPage,
  pageItems,
  pageOf,
  type ResponsesStore,
  type StoredResponse,
  withItemIds,
} from "./responses_store.ts";

/** Options for {@linkcode createMemoryResponsesStore}. */
export interface MemoryResponsesStoreOptions {
  /** Most responses kept; the oldest put goes first. Default 10,000. */
  maxResponses?: number;
}

/** A `ResponsesStore` in a `Map`, in put order. */
export function createMemoryResponsesStore(options: MemoryResponsesStoreOptions = {}): ResponsesStore {
  const max = Math.max(1, options.maxResponses ?? 10_000);
  const byId = new Map<string, StoredResponse>();
  const owned = (id: string, token: string): StoredResponse | null => {
    const record = byId.get(id);
    return record !== undefined && record.token === token ? record : null;
  };

  return {
    put(record) {
      const existing = byId.get(record.id);
      if (existing !== undefined && existing.token !== record.token) return Promise.resolve();
      const copy = structuredClone({ ...record, input_items: withItemIds(record.input_items) });
      byId.delete(record.id); // a replaced record moves to the end: it is the newest put
      byId.set(record.id, copy);
      while (byId.size > max) byId.delete(byId.keys().next().value!);
      return Promise.resolve();
    },
    get(id, token) {
      const record = owned(id, token);
      return Promise.resolve(record === null ? null : structuredClone(record));
    },
    delete(id, token) {
      return Promise.resolve(owned(id, token) !== null && byId.delete(id));
    },
    inputItems(id, token, page: ItemsPage): Promise<ItemsList | null> {
      try {
        pageOf(page); // a bad page is refused whether or not the response exists
        const record = owned(id, token);
        return Promise.resolve(record === null ? null : structuredClone(pageItems(record.input_items, page)));
      } catch (e) {
        return Promise.reject(e);
      }
    },
    chain(id, token) {
      const items = buildChain(id, token, owned);
      return Promise.resolve(items === null ? null : structuredClone(items));
    },
    prune(beforeIso) {
      try {
        const cutoff = cutoffSeconds(beforeIso);
        let deleted = 0;
        for (const [id, record] of byId) {
          if (record.created_at < cutoff && byId.delete(id)) deleted++;
        }
        return Promise.resolve(deleted);
      } catch (e) {
        return Promise.reject(e);
      }
    },
  };
}
