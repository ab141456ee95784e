/**
 * What only the in-memory store does: its bounds (how many responses, how many bytes), past which the oldest
 * put of the owner holding the most is dropped. The `ResponsesStore` contract it shares with the others is in responses_store_test.ts.
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

Deno.test("memory responses: one owner's puts past maxResponses drop its own oldest, not another's", async () => {
  const store = createMemoryResponsesStore({ maxResponses: 4 });
  await store.put(response("resp_b1", { owner: "bob" }));
  await store.put(response("resp_b2", { owner: "bob", previous_response_id: "resp_b1" }));
  for (let i = 1; i <= 5; i++) await store.put(response(`resp_a${i}`));
  // Bob's conversation is whole (a chain from resp_b2 still starts at resp_b1) and his items are found.
  const chain = await store.chain("resp_b2", "bob");
  assert.deepEqual(chain?.items.map((item) => item.id), [
    "resp_b1_in",
    "resp_b1_out",
    "resp_b2_in",
    "resp_b2_out",
  ]);
  assert.deepEqual((await store.items(["resp_b1_in"], "bob")).map((item) => item?.id), ["resp_b1_in"]);
  // Alice, holding the most, lost her oldest three.
  for (const id of ["resp_a1", "resp_a2", "resp_a3"]) assert.equal(await store.get(id, "alice"), null, id);
  for (const id of ["resp_a4", "resp_a5"]) assert.ok(await store.get(id, "alice"), id);
  // Once Bob holds the most, his oldest goes first.
  await store.put(response("resp_b3", { owner: "bob" }));
  await store.put(response("resp_b4", { owner: "bob" }));
  assert.equal(await store.get("resp_b1", "bob"), null);
  assert.ok(await store.get("resp_a4", "alice"));
  assert.ok(await store.get("resp_a5", "alice"));
});

Deno.test("memory responses: past maxBytes the owner holding the most bytes loses its oldest", async () => {
  const one = JSON.stringify(response("resp_b1", { owner: "bob" })).length;
  const store = createMemoryResponsesStore({ maxBytes: 8 * one });
  await store.put(response("resp_b1", { owner: "bob" }));
  // Alice's large puts (each about three of Bob's) fill the budget: her own oldest go, never Bob's one.
  const large = (id: string) =>
    response(id, { input_items: [{ type: "message", role: "user", content: "x".repeat(2 * one) }] });
  for (let i = 1; i <= 5; i++) await store.put(large(`resp_a${i}`));
  assert.ok(await store.get("resp_b1", "bob"));
  assert.equal(await store.get("resp_a1", "alice"), null);
  assert.ok(await store.get("resp_a5", "alice"));
  // One record over the whole budget is kept alone: the response just answered stays chainable.
  await store.put(response("resp_b2", {
    owner: "bob",
    input_items: [{ type: "message", role: "user", content: "x".repeat(9 * one) }],
  }));
  assert.ok(await store.get("resp_b2", "bob"));
});
