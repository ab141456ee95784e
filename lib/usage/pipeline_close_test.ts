/**
 * `close()` gives the store `closeTimeoutMs` in all, then spills what it has not confirmed; the final insert
 * that was still running then and fails later must not spill its batch a second time (the records would be in
 * the spill file twice, each replay inserting them twice over).
 */
import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { createUsagePipeline } from "./pipeline.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { backstop } from "../../tests/helpers/backstop.ts";
import { controlledStore, makeRecord, readWrittenJsonl } from "../../tests/helpers/usage.ts";

Deno.test("pipeline close: a final insert that fails after the close's time is up spills nothing twice", async () => {
  const dir = await Deno.makeTempDir();
  const inner = createSqliteStore(`${dir}/usage.sqlite`);
  const store = controlledStore(inner);
  const spillPath = `${dir}/usage-spill.jsonl`;
  const logger = createMemoryLogger();
  const pipeline = createUsagePipeline({
    store,
    spillPath,
    queueSize: 100,
    batchSize: 100,
    // No background batch before close(): the insert it holds is close()'s own, final one.
    flushIntervalMs: 60_000,
    // What close() waits for when it is not given its own bound: the test would fail here on a regression.
    shutdownTimeoutMs: 10 * 60_000,
    closeTimeoutMs: 50,
    logger,
  });
  try {
    await pipeline.flush(); // the pump started with the pipeline is over: the insert below is close()'s
    for (let i = 0; i < 5; i++) pipeline.write(makeRecord(i));
    store.block();
    store.failNext = 1;
    await backstop(pipeline.close(), "close() within its own bound, the final insert still held");
    assert.ok(logger.lines.some((l) => l.msg === "usage_close_timeout"), "the close ran out of time");
    assert.equal(store.calls, 1, "the final insert was under way");
    // The database answers at last, refusing the batch close() already spilled.
    store.release();
    await store.idle();
    await pipeline.flush();
    const spilled = (await readWrittenJsonl(spillPath)).map((r) => r.request_id);
    assert.deepEqual(spilled, ["req_0", "req_1", "req_2", "req_3", "req_4"], "each record spilled once");
  } finally {
    await inner.close();
    await Deno.remove(dir, { recursive: true });
  }
});
