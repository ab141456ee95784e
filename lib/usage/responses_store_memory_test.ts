/**
 * What only the in-memory store does: its bounds (how many responses, how many bytes), past which the oldest
 * put is dropped. The `ResponsesStore` contract it shares with the others is in responses_store_test.ts.
 */
import assert from "node:assert/strict";
import { createMemoryResponsesStore } from "./responses_store_memory.ts";
import type { StoredResponse } from "./responses_store.ts";
import { response } from "./responses_store_test_helpers.ts";

Deno.test("memory responses: a dropped response's items are not found", async () => {
  const store = createMemoryResponsesStore({ maxResponses: 1 });
  await store.put(response("resp_1"));
  await store.put(response("resp_2"));
  const found = await store.items(["resp_1_out", "resp_2_out"], "alice");
  assert.deepEqual(found.map((item) => item?.id ?? null), [null, "resp_2_out"]);
});

Deno.test("memory responses: past maxResponses the oldest put is dropped", async () => {
  const store = createMemoryResponsesStore({ maxResponses: 2 });
  await store.put(response("resp_1"));
  await store.put(response("resp_2"));
  await store.put(response("resp_1", { alias: "again" })); // a replaced one counts as the newest
  await store.put(response("resp_3"));
  assert.equal(await store.get("resp_2", "alice"), null);
  assert.equal((await store.get("resp_1", "alice"))?.alias, "again");
  assert.ok(await store.get("resp_3", "alice"));
});

Deno.test("memory responses: past maxBytes the oldest puts are dropped; the newest is always kept", async () => {
  const bytesOf = (record: StoredResponse) => JSON.stringify(record).length;
  const one = bytesOf(response("resp_1"));
  // Room for two records of this size, not three (each id is as long, so each record is as large).
  const store = createMemoryResponsesStore({ maxBytes: 2 * one + one / 2 });
  for (const id of ["resp_1", "resp_2", "resp_3"]) await store.put(response(id));
  assert.equal(await store.get("resp_1", "alice"), null);
  assert.deepEqual(await store.items(["resp_1_out"], "alice"), [null]);
  assert.ok(await store.get("resp_2", "alice"));
  assert.ok(await store.get("resp_3", "alice"));
  // One record over the whole budget is kept alone: the response just answered stays chainable.
  const big = response("resp_big", {
    input_items: [{ type: "message", role: "user", content: "x".repeat(4 * one) }],
  });
  await store.put(big);
  assert.equal(await store.get("resp_2", "alice"), null);
  assert.equal(await store.get("resp_3", "alice"), null);
  assert.ok(await store.chain("resp_big", "alice"));
});
