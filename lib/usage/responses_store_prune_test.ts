/**
 * The `ResponsesStore` contract for retention's prune, run against each implementation
 * (`RESPONSES_STORES`): what a prune deletes, at most a batch a call (each its own statement, so a large
 * backlog never outlasts PostgreSQL's time limit nor holds the SQLite worker), and a retention run over a real
 * store calling it until none is left.
 */
import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { UsageQueryError } from "./query.ts";
import { runResponsesRetention } from "./retention.ts";
import { DAY, NOW, response, RESPONSES_STORES } from "./responses_store_test_helpers.ts";

for (const [name, open] of RESPONSES_STORES) {
  Deno.test(`${name} responses: prune deletes the responses created before the cut-off`, async () => {
    const { store, close } = await open();
    await store.put(response("resp_old", { created_at: NOW - 40 * DAY }));
    await store.put(response("resp_month", { created_at: NOW - 30 * DAY }));
    await store.put(response("resp_new", { created_at: NOW - DAY }));
    const cutoff = new Date((NOW - 30 * DAY) * 1000).toISOString();
    assert.equal(await store.prune(cutoff, 100), 1);
    assert.equal(await store.get("resp_old", "alice"), null);
    assert.ok(await store.get("resp_month", "alice"), "created exactly at the cut-off: kept");
    assert.ok(await store.get("resp_new", "alice"));
    assert.equal(await store.prune(cutoff, 100), 0);
    await assert.rejects(() => store.prune("last month", 100), UsageQueryError);
    await close();
  });

  Deno.test(`${name} responses: a prune deletes at most its batch; a retention run prunes until none is left`, async () => {
    const { store, close } = await open();
    const old = ["resp_o1", "resp_o2", "resp_o3", "resp_o4", "resp_o5"];
    for (const [i, id] of old.entries()) await store.put(response(id, { created_at: NOW - (40 + i) * DAY }));
    await store.put(response("resp_new", { created_at: NOW - DAY }));
    const cutoff = new Date((NOW - 30 * DAY) * 1000).toISOString();
    const left = async () =>
      (await Promise.all(old.map((id) => store.get(id, "alice")))).filter((r) => r).length;
    assert.equal(await store.prune(cutoff, 2), 2, "one batch");
    assert.equal(await left(), 3);
    // Each batch takes its responses' items with it, and leaves the others' findable.
    const found = await store.items(old.map((id) => `${id}_out`), "alice");
    for (const [i, id] of old.entries()) {
      const there = (await store.get(id, "alice")) !== null;
      assert.equal(found[i]?.id ?? null, there ? `${id}_out` : null, `${id}'s item follows its response`);
    }
    // A retention run calls again until a batch comes back short.
    const logger = createMemoryLogger();
    await runResponsesRetention({
      store,
      retentionMs: 30 * DAY * 1000,
      retentionBatch: 2,
      now: () => NOW * 1000,
      logger,
    });
    assert.equal(await left(), 0);
    assert.ok(await store.get("resp_new", "alice"), "the newer response is kept");
    assert.deepEqual(logger.lines, [{
      level: "info",
      msg: "responses_retention",
      deleted: 3,
      before: cutoff,
    }]);
    assert.equal(await store.prune(cutoff, 2), 0);
    await close();
  });
}
