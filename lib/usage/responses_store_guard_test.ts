import assert from "node:assert/strict";
import { isStorableId, MAX_ID_LENGTH, storableText } from "./client_text.ts";
import { UsageQueryError } from "./query.ts";
import type { ResponsesStore, StoredResponse } from "./responses_store.ts";
import { guardResponsesStore } from "./responses_store_guard.ts";
import { createMemoryResponsesStore } from "./responses_store_memory.ts";

const HOSTILE = ["", "resp_\u0000", "\u0000", "resp_\ud800", "\udc00resp_", "r".repeat(MAX_ID_LENGTH + 1)];

/** The memory store, with every id any call hands it recorded. */
function spied(): { store: ResponsesStore; seen: string[] } {
  const inner = createMemoryResponsesStore();
  const seen: string[] = [];
  const store: ResponsesStore = {
    put: (record) => inner.put(record),
    get: (id, owner) => (seen.push(id), inner.get(id, owner)),
    delete: (id, owner) => (seen.push(id), inner.delete(id, owner)),
    inputItems: (id, owner, page) => (seen.push(id), inner.inputItems(id, owner, page)),
    chain: (id, owner) => (seen.push(id), inner.chain(id, owner)),
    items: (ids, owner) => (seen.push(...ids), inner.items(ids, owner)),
    prune: (before, limit) => inner.prune(before, limit),
  };
  return { store, seen };
}

function record(id: string, itemIds: string[], upstream: string | null = null): StoredResponse {
  return {
    id,
    owner: "tok_a",
    environment: "test",
    created_at: 1_700_000_000,
    alias: "chat",
    provider: "local",
    native: upstream !== null,
    upstream_id: upstream,
    previous_response_id: null,
    input_items: itemIds.map((item) => ({ type: "message", role: "user", id: item, content: item })),
    response: { id, object: "response", output: [] },
  };
}

Deno.test("client text: what every store can hold", () => {
  assert.ok(isStorableId("resp_0123"));
  assert.ok(isStorableId("msg_'; DROP TABLE responses; --%_\\\""));
  assert.ok(isStorableId("r".repeat(MAX_ID_LENGTH)));
  for (const id of HOSTILE) assert.ok(!isStorableId(id), JSON.stringify(id));
  assert.ok(!isStorableId(42));
  assert.equal(storableText("a\u0000b\ud800c\udc00"), "a\uFFFDb\uFFFDc\uFFFD");
  assert.equal(storableText("ok 😀 '%_\\"), "ok 😀 '%_\\");
});

Deno.test("responses guard: an id no store can hold never reaches the store, and is not found", async () => {
  const { store: inner, seen } = spied();
  const store = guardResponsesStore(inner);
  await store.put(record("resp_1", ["msg_1"]));
  for (const id of HOSTILE) {
    assert.equal(await store.get(id, "tok_a"), null);
    assert.equal(await store.delete(id, "tok_a"), false);
    assert.equal(await store.inputItems(id, "tok_a", {}), null);
    assert.equal(await store.chain(id, "tok_a"), null);
    await assert.rejects(store.inputItems(id, "tok_a", { limit: 0 }), UsageQueryError, "a bad page first");
  }
  assert.deepEqual(seen, []);
  const found = await store.items(["resp_\u0000", "msg_1", "\ud800", "msg_2"], "tok_a");
  assert.deepEqual(found.map((item) => item?.id ?? null), [null, "msg_1", null, null]);
  assert.deepEqual(seen, ["msg_1", "msg_2"]);
  assert.ok(await store.get("resp_1", "tok_a"));
});

Deno.test("responses guard: a put keeps unstorable item ids as sent, unindexed; an unstorable upstream id is dropped", async () => {
  const store = guardResponsesStore(createMemoryResponsesStore());
  await store.put(record("resp_2", ["msg_\u0000", "msg_ok", "msg_\ud800"], "up_\u0000"));
  const stored = await store.get("resp_2", "tok_a");
  assert.deepEqual(stored?.input_items.map((item) => item.id), ["msg_\u0000", "msg_ok", "msg_\ud800"]);
  assert.equal(stored?.upstream_id, null);
  const found = await store.items(["msg_\u0000", "msg_ok", "msg_\ud800"], "tok_a");
  assert.deepEqual(found.map((item) => item?.id ?? null), [null, "msg_ok", null]);
  await store.put(record("resp_3", [], "up_fine"));
  assert.equal((await store.get("resp_3", "tok_a"))?.upstream_id, "up_fine");
});
