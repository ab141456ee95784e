/**
 * The responses store of one WebSocket connection: the gateway's store, with the connection's `store: false`
 * responses kept in memory so its next message can chain from them by `previous_response_id`, as OpenAI's
 * WebSocket mode allows (Codex sends `store: false` and chains every turn to the one before). They never leave
 * the connection themselves: another connection, and any HTTP request, sees only the gateway's store.
 *
 * Each kept response holds its whole conversation (what `chain` answers: the earlier conversation, its input
 * items, its output), so chaining never needs an evicted one; only the last few are kept, and none whose
 * conversation is over `maxBytes`, so the memory a connection holds is bounded. A chain from an evicted or
 * oversized one is the usual 404, after which a client resends the whole conversation.
 *
 * A stored response (`store` on) chained from one of them is put with that conversation as the start of its
 * own input items and no earlier response: the shared store never held the `store: false` one, so the stored
 * response carries what came before it, and any later request (on this connection, another, or over HTTP)
 * chains from it with the whole conversation.
 *
 * @module
 */
import { isObject, type JsonObject } from "../../openai/types.ts";
import type { Conversation, ResponsesStore, StoredResponse } from "../../usage/responses_store.ts";

/** How many of the connection's `store: false` responses are kept (the last ones). */
const KEPT = 4;

interface Kept {
  record: StoredResponse;
  conversation: Pick<Conversation, "items" | "nativeBy">;
}

/** The output items of a stored Response object. */
function outputOf(record: StoredResponse): JsonObject[] {
  const output = record.response.output;
  return Array.isArray(output) ? output.filter(isObject) : [];
}

/** A connection's view of `shared`, keeping its `store: false` responses (each conversation up to `maxBytes`). */
export function connectionResponses(shared: ResponsesStore, maxBytes: number): ResponsesStore {
  const kept = new Map<string, Kept>();
  const local = (id: string, owner: string) => {
    const found = kept.get(id);
    return found !== undefined && found.record.owner === owner ? found : undefined;
  };
  return {
    put(record) {
      const previous = record.previous_response_id;
      const earlier = previous === null ? undefined : local(previous, record.owner);
      if (earlier === undefined) return shared.put(record);
      return shared.put({
        ...record,
        previous_response_id: null,
        input_items: [...structuredClone(earlier.conversation.items), ...record.input_items],
      });
    },
    async remember(record) {
      const previous = record.previous_response_id;
      const earlier = previous === null
        ? { items: [], nativeBy: [] }
        : await this.chain(previous, record.owner);
      if (earlier === null) return;
      const outputs = outputOf(record);
      // Who wrote the output is kept apart from `native`, cleared below: its reasoning may go back to that provider.
      const producer = record.native ? record.provider : null;
      const conversation = {
        items: [...earlier.items, ...record.input_items, ...outputs],
        nativeBy: [
          ...earlier.nativeBy,
          ...record.input_items.map(() => null),
          ...outputs.map(() => producer),
        ],
      };
      if (JSON.stringify(conversation.items).length > maxBytes) return;
      kept.delete(record.id);
      kept.set(record.id, {
        // Nothing upstream holds it (`store: false` went upstream too): a native target gets the conversation.
        record: { ...record, native: false, upstream_id: null },
        conversation,
      });
      for (const id of kept.keys()) {
        if (kept.size <= KEPT) break;
        kept.delete(id);
      }
    },
    async get(id, owner) {
      return local(id, owner)?.record ?? await shared.get(id, owner);
    },
    delete: (id, owner) => shared.delete(id, owner),
    inputItems: (id, owner, page) => shared.inputItems(id, owner, page),
    async chain(id, owner) {
      const found = local(id, owner);
      // No upstream holds a kept one (`store: false` went upstream too): its conversation is always resent.
      if (found !== undefined) return { ...structuredClone(found.conversation), upstream: null };
      return await shared.chain(id, owner);
    },
    items: (ids, owner) => shared.items(ids, owner),
    prune: (beforeIso, limit) => shared.prune(beforeIso, limit),
  };
}
