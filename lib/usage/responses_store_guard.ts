/**
 * The stored-response store as the handlers see it, whatever keeps it (SQLite, PostgreSQL, memory): every id
 * a client sends is checked once here (`client_text.ts`) before a store is asked, so that an id no store can
 * hold is "not found" on all of them, exactly as an id that never existed, never a database error.
 *
 * - `get`, `delete`, `inputItems`, `chain` with such an id: `null` / `false` (the handlers' 404), without a
 *   statement. `inputItems` still refuses a bad page first, as the stores do.
 * - `items`: such ids are `null` (an `item_reference` 404); the others are looked up in one call.
 * - `put`: an upstream id that cannot be stored is dropped (a later turn then resends the conversation instead
 *   of naming it upstream); item ids that cannot be stored are left out of the item index by `itemSlots`, so
 *   they stay in the stored input as the client sent them and are never referable, on every store.
 *
 * The `input_items` cursors (`after`, `before`) never reach a statement: paging is laid out in TypeScript.
 *
 * @module
 */
import { isStorableId } from "./client_text.ts";
import { pageOf, type ResponsesStore } from "./responses_store.ts";

/** `store` behind the check of every client-supplied id. */
export function guardResponsesStore(store: ResponsesStore): ResponsesStore {
  return {
    put(record) {
      const upstream = record.upstream_id;
      return store.put(
        upstream == null || isStorableId(upstream) ? record : { ...record, upstream_id: null },
      );
    },
    get(id, owner) {
      return isStorableId(id) ? store.get(id, owner) : Promise.resolve(null);
    },
    delete(id, owner) {
      return isStorableId(id) ? store.delete(id, owner) : Promise.resolve(false);
    },
    async inputItems(id, owner, page) {
      if (isStorableId(id)) return await store.inputItems(id, owner, page);
      pageOf(page); // a bad page is refused whether or not the response exists
      return null;
    },
    chain(id, owner) {
      return isStorableId(id) ? store.chain(id, owner) : Promise.resolve(null);
    },
    async items(ids, owner) {
      const storable = ids.filter(isStorableId);
      if (storable.length === ids.length) return await store.items(ids, owner);
      const found = storable.length === 0 ? [] : await store.items(storable, owner);
      let at = 0;
      return ids.map((id) => isStorableId(id) ? found[at++] : null);
    },
    prune(beforeIso, limit) {
      return store.prune(beforeIso, limit);
    },
  };
}
