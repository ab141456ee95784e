/**
 * `health()`, which `/readyz` reads: a failing store shows `ok: false` and, once the queue overflows, `spilling`;
 * both clear when the store takes a batch again. Read from the pipeline's own state, without a call to the store.
 */
import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { createUsagePipeline } from "./pipeline.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { controlledStore, makeRecord, waitFor } from "../../tests/helpers/usage.ts";

Deno.test("pipeline health: a failing store is not ok, overflow spills, and both clear on recovery", async () => {
  const dir = await Deno.makeTempDir();
  const store = controlledStore(createSqliteStore(`${dir}/usage.sqlite`));
  const pipeline = createUsagePipeline({
    store,
    spillPath: `${dir}/usage-spill.jsonl`,
    queueSize: 2,
    batchSize: 2,
    flushIntervalMs: 10,
    retryMaxMs: 20,
    logger: createMemoryLogger(),
  });
  try {
    assert.deepEqual(pipeline.health(), { ok: true, spilling: false });
    store.failNext = 1_000;
    pipeline.write(makeRecord(0));
    pipeline.write(makeRecord(1));
    await waitFor(() => !pipeline.health().ok);
    // The failed batch is held for its retry; the queue behind it fills, then records go to the spill file.
    for (let i = 2; i < 6; i++) pipeline.write(makeRecord(i));
    assert.deepEqual(pipeline.health(), { ok: false, spilling: true });
    store.failNext = 0;
    await waitFor(() => pipeline.health().ok);
    assert.deepEqual(pipeline.health(), { ok: true, spilling: false });
  } finally {
    await pipeline.close();
    await Deno.remove(dir, { recursive: true });
  }
});
