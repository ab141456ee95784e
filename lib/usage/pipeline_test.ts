import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { createUsagePipeline, type UsagePipeline, type UsagePipelineOptions } from "./pipeline.ts";
import type { UsageRecord } from "./record.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import type { StoredUsageRecord, UsageStore } from "./store.ts";
import {
  type ControlledStore,
  controlledStore,
  countRows,
  exists,
  makeRecord,
  readJsonl,
  readWrittenJsonl,
  waitFor,
} from "../../tests/helpers/usage.ts";

async function setup() {
  const dir = await Deno.makeTempDir();
  return {
    dir,
    dbPath: `${dir}/usage.sqlite`,
    spillPath: `${dir}/spill/usage-spill.jsonl`,
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
}

function pipelineOf(store: UsageStore | null, spillPath: string, extra: Partial<UsagePipelineOptions> = {}) {
  const logger = createMemoryLogger();
  const pipeline = createUsagePipeline({
    store,
    spillPath,
    queueSize: 1000,
    batchSize: 100,
    flushIntervalMs: 20,
    logger,
    ...extra,
  });
  return { pipeline, logger };
}

/** Request ids in the spill file and in a leftover `.replaying` file. */
async function spilledIds(spillPath: string): Promise<string[]> {
  const a = await readJsonl(spillPath);
  const b = await readJsonl(`${spillPath}.replaying`);
  return [...a, ...b].map((r) => r.request_id);
}

/**
 * Runs `pipeline.write(record)` and says whether the store was called before it returned: a store called from
 * inside write() (a synchronous SQLite insert, an `await`ed one) runs on the request path, so a slow store
 * would slow every request.
 */
function writeAside(pipeline: UsagePipeline, store: ControlledStore, record: UsageRecord): {
  returned: unknown;
  storeCalledInside: boolean;
} {
  const before = store.calls;
  const returned: unknown = pipeline.write(record);
  return { returned, storeCalledInside: store.calls !== before };
}

Deno.test("pipeline: a store that has not answered never holds up write(); after close and a replay every record is stored once", async () => {
  const t = await setup();
  const store = controlledStore(createSqliteStore(t.dbPath));
  // Every insert waits for this test's release: the slowest store there is, and one the test controls.
  store.block();
  const { pipeline } = pipelineOf(store, t.spillPath, {
    queueSize: 1000,
    batchSize: 500,
    flushIntervalMs: 50,
  });

  const N = 10_000;
  let calledInside = 0;
  for (let i = 0; i < N; i++) {
    const { returned, storeCalledInside } = writeAside(pipeline, store, makeRecord(i));
    // Nothing to wait for is handed back, and the record is taken (queued or spilled) by the time it returns.
    assert.equal(returned, undefined, "write() hands back something to wait for");
    const { queued, spilled } = pipeline.stats();
    assert.equal(queued + spilled, i + 1, `record ${i} was not taken when write() returned`);
    if (storeCalledInside) calledInside++;
  }
  assert.equal(calledInside, 0, "write() called the store itself");
  // The store has not answered one insert, and write() returned 10,000 times.
  assert.ok(pipeline.stats().queued <= 1000, "memory stays bounded by the queue");
  assert.equal(pipeline.stats().spilled, N - 1000);
  // Nor does it wait for the disk: the overflow is written after write() returned, off the request path.
  assert.equal(pipeline.stats().spillPending, N - 1000, "write() wrote the spill file itself");

  store.release();
  await pipeline.close();
  const stats = pipeline.stats();
  assert.equal(stats.queued, 0);
  assert.equal(stats.stored + stats.spilled, N);
  await store.close();
  // every record is in the store or the spill file
  const stored = countRows(t.dbPath);
  const all = new Set([...stored.ids, ...await spilledIds(t.spillPath)]);
  assert.equal(all.size, N);

  // recovery: the next start (with a healthy store) replays the spill file
  const healthy = createSqliteStore(t.dbPath);
  const next = pipelineOf(healthy, t.spillPath).pipeline;
  await next.replaySpill();
  await next.close();
  await healthy.close();
  const after = countRows(t.dbPath);
  assert.equal(after.rows, N, "exactly once");
  assert.equal(after.distinct, N);
  assert.equal(await exists(t.spillPath), false);
  assert.equal(await exists(`${t.spillPath}.replaying`), false);
  await t.cleanup();
});

Deno.test("pipeline: a failing store loses nothing; after recovery every record is stored exactly once", async () => {
  const t = await setup();
  const store = controlledStore(createSqliteStore(t.dbPath));
  store.failNext = 4;
  const { pipeline, logger } = pipelineOf(store, t.spillPath, { queueSize: 300, batchSize: 50 });

  let n = 0;
  // bursts while the store fails: the queue has room at first (retries keep the batch), then overflows
  for (let burst = 0; burst < 8; burst++) {
    for (let i = 0; i < 250; i++) pipeline.write(makeRecord(n++));
    await new Promise((r) => setTimeout(r, 15));
  }
  assert.ok(pipeline.stats().failures >= 1);
  assert.ok(pipeline.stats().spilled > 0, "overflow spilled");
  await waitFor(async () =>
    store.failNext === 0 && pipeline.stats().queued === 0 && pipeline.stats().spillPending === 0 &&
    !(await exists(t.spillPath)) && !(await exists(`${t.spillPath}.replaying`))
  );
  assert.ok(logger.lines.some((l) => l.msg === "usage_store_failed"));
  assert.ok(logger.lines.some((l) => l.msg === "usage_store_recovered"));
  await pipeline.close();
  await store.close();
  const rows = countRows(t.dbPath);
  assert.equal(rows.rows, n);
  assert.equal(rows.distinct, n);
  await t.cleanup();
});

Deno.test("pipeline: queue overflow spills to the file, which is replayed into the store on recovery", async () => {
  const t = await setup();
  const store = controlledStore(createSqliteStore(t.dbPath));
  store.block();
  const { pipeline } = pipelineOf(store, t.spillPath, { queueSize: 100, batchSize: 50 });
  for (let i = 0; i < 1000; i++) pipeline.write(makeRecord(i));
  // The spill file is appended to in the background: only its whole lines are read while that goes on.
  let spilled: StoredUsageRecord[] = [];
  await waitFor(async () => (spilled = await readWrittenJsonl(t.spillPath)).length === 900);
  assert.deepEqual(
    spilled.map((r) => r.request_id),
    Array.from({ length: 900 }, (_, i) => `req_${i + 100}`),
    "the overflow, in order",
  );
  assert.equal(pipeline.stats().queued, 100);

  store.release();
  await waitFor(async () =>
    pipeline.stats().replayed === 900 && !(await exists(t.spillPath)) &&
    !(await exists(`${t.spillPath}.replaying`))
  );
  await pipeline.close();
  await store.close();
  const rows = countRows(t.dbPath);
  assert.equal(rows.rows, 1000);
  assert.equal(rows.distinct, 1000);
  await t.cleanup();
});

Deno.test("pipeline: a leftover spill file and an interrupted replay are replayed at startup, once", async () => {
  const t = await setup();
  await Deno.mkdir(`${t.dir}/spill`);
  const line = (r: StoredUsageRecord) => JSON.stringify(r) + "\n";
  const withUid = (i: number): StoredUsageRecord => ({ ...makeRecord(i), uid: `boot-${i}` });
  // a crash mid-replay: `.replaying` holds 0..199, of which 0..49 were already inserted
  const store = createSqliteStore(t.dbPath);
  await store.insert(Array.from({ length: 50 }, (_, i) => withUid(i)));
  await Deno.writeTextFile(
    `${t.spillPath}.replaying`,
    Array.from({ length: 200 }, (_, i) => line(withUid(i))).join(""),
  );
  // and records spilled after it: 200..499
  await Deno.writeTextFile(
    t.spillPath,
    Array.from({ length: 300 }, (_, i) => line(withUid(i + 200))).join(""),
  );

  const { pipeline } = pipelineOf(store, t.spillPath);
  await waitFor(async () => !(await exists(t.spillPath)) && !(await exists(`${t.spillPath}.replaying`)));
  await pipeline.close();
  await store.close();
  const rows = countRows(t.dbPath);
  assert.equal(rows.rows, 500);
  assert.equal(rows.distinct, 500);
  await t.cleanup();
});

Deno.test("pipeline: closing mid-replay keeps the rest in .replaying; the next start finishes it", async () => {
  const t = await setup();
  await Deno.mkdir(`${t.dir}/spill`);
  const N = 2000;
  await Deno.writeTextFile(
    t.spillPath,
    Array.from({ length: N }, (_, i) => JSON.stringify({ ...makeRecord(i), uid: `u${i}` }) + "\n").join(""),
  );
  const slow = controlledStore(createSqliteStore(t.dbPath));
  slow.delayMs = 30;
  const first = pipelineOf(slow, t.spillPath, { batchSize: 100 }).pipeline;
  await waitFor(() => first.stats().replayed >= 300);
  await first.close();
  await slow.close();
  assert.ok(first.stats().replayed < N, "stopped part-way");
  assert.equal(await exists(`${t.spillPath}.replaying`), true, "the unfinished replay is kept");
  const partial = countRows(t.dbPath).rows;
  assert.ok(partial >= 300 && partial < N);

  const store = createSqliteStore(t.dbPath);
  const second = pipelineOf(store, t.spillPath).pipeline;
  await second.replaySpill();
  await second.close();
  await store.close();
  const rows = countRows(t.dbPath);
  assert.equal(rows.rows, N, "replayed rows are not duplicated");
  assert.equal(rows.distinct, N);
  assert.equal(await exists(`${t.spillPath}.replaying`), false);
  await t.cleanup();
});

Deno.test("pipeline: flush() stores what is queued, or spills it when the store fails", async () => {
  const t = await setup();
  const store = controlledStore(createSqliteStore(t.dbPath));
  const { pipeline } = pipelineOf(store, t.spillPath, { flushIntervalMs: 60_000 });
  for (let i = 0; i < 250; i++) pipeline.write(makeRecord(i));
  await pipeline.flush();
  assert.equal((await store.query({})).totals.requests, 250);

  store.failNext = 1_000;
  for (let i = 250; i < 300; i++) pipeline.write(makeRecord(i));
  await pipeline.flush();
  assert.equal(pipeline.stats().queued, 0);
  assert.equal((await readJsonl(t.spillPath)).length, 50);
  store.failNext = 0;
  await pipeline.close();
  await store.close();
  await t.cleanup();
});

// More than one batch queued and a store that rejects (not hangs): the final drain stops at the first failed
// batch, so the batches behind it must be spilled too, or those requests vanish from billing.
Deno.test("pipeline: flush() and close() on a failing store spill every queued batch, not just the first", async () => {
  const t = await setup();
  const store = controlledStore(createSqliteStore(t.dbPath));
  store.failNext = 1_000;
  const { pipeline } = pipelineOf(store, t.spillPath, { batchSize: 10, flushIntervalMs: 60_000 });
  for (let i = 0; i < 50; i++) pipeline.write(makeRecord(i));
  await pipeline.flush();
  assert.equal(pipeline.stats().queued, 0, "flush() left records queued");
  assert.equal(new Set(await spilledIds(t.spillPath)).size, 50);

  for (let i = 50; i < 80; i++) pipeline.write(makeRecord(i));
  await pipeline.close();
  assert.equal(pipeline.stats().queued, 0, "close() left records queued");
  const ids = await spilledIds(t.spillPath);
  assert.equal(ids.length, 80);
  assert.deepEqual(new Set(ids), new Set(Array.from({ length: 80 }, (_, i) => `req_${i}`)));
  await store.close();
  await t.cleanup();
});

Deno.test("pipeline: close() does not hang on a stuck store: it spills the batch in flight and the queue", async () => {
  const t = await setup();
  const inner = createSqliteStore(t.dbPath);
  const store = controlledStore(inner);
  store.block();
  const { pipeline, logger } = pipelineOf(store, t.spillPath, { batchSize: 10, shutdownTimeoutMs: 100 });
  for (let i = 0; i < 50; i++) pipeline.write(makeRecord(i));
  await waitFor(() => store.calls > 0);
  await pipeline.close();
  assert.ok(logger.lines.some((l) => l.msg === "usage_close_timeout"));
  const ids = await spilledIds(t.spillPath);
  assert.equal(new Set(ids).size, 50);
  // records written after close are spilled too
  pipeline.write(makeRecord(99));
  await waitFor(async () => (await readWrittenJsonl(t.spillPath)).length === 51);
  store.release();
  await store.idle(); // the insert it was stuck on ends before the database closes under it
  await inner.close();
  await t.cleanup();
});

Deno.test("pipeline: the JSONL file gets every record once, in order", async () => {
  const t = await setup();
  const jsonlPath = `${t.dir}/out/usage.jsonl`;
  const store = createSqliteStore(":memory:");
  // A queue larger than the burst: this test is about the JSONL file, not about overflow (tested above).
  const { pipeline } = pipelineOf(store, t.spillPath, { jsonlPath, queueSize: 5000 });
  for (let i = 0; i < 1500; i++) {
    pipeline.write(makeRecord(i));
    if (i % 400 === 0) await new Promise((r) => setTimeout(r, 5));
  }
  await pipeline.close();
  const lines = await readJsonl(jsonlPath);
  assert.deepEqual(lines.map((l) => l.request_id), Array.from({ length: 1500 }, (_, i) => `req_${i}`));
  assert.equal(new Set(lines.map((l) => l.uid)).size, 1500, "each line has its own uid");
  assert.equal((await store.query({})).totals.requests, 1500);
  await store.close();
  await t.cleanup();
});

Deno.test("pipeline: without a store records go to the JSONL file, or to the spill file without one", async () => {
  const t = await setup();
  const jsonlPath = `${t.dir}/usage.jsonl`;
  const a = pipelineOf(null, t.spillPath, { jsonlPath }).pipeline;
  for (let i = 0; i < 10; i++) a.write(makeRecord(i));
  await a.close();
  assert.equal((await readJsonl(jsonlPath)).length, 10);
  assert.equal(await exists(t.spillPath), false);

  const b = pipelineOf(null, t.spillPath).pipeline;
  for (let i = 0; i < 10; i++) b.write(makeRecord(i));
  await b.close();
  assert.equal((await readJsonl(t.spillPath)).length, 10);
  await t.cleanup();
});

Deno.test("pipeline: retention runs at start and then periodically", async () => {
  const t = await setup();
  const store = createSqliteStore(":memory:");
  const day = 86_400_000;
  const now = Date.UTC(2025, 5, 1);
  const iso = (ms: number) => new Date(ms).toISOString();
  await store.insert([
    makeRecord(1, { time: iso(now - 40 * day) }),
    makeRecord(2, { time: iso(now - 10 * day) }),
    makeRecord(3, { time: iso(now - day) }),
  ]);
  let clock = now;
  const { pipeline, logger } = pipelineOf(store, t.spillPath, {
    retentionMs: 30 * day,
    retentionIntervalMs: 20,
    now: () => clock,
  });
  await pipeline.flush(); // the start-up retention ran before it on the same lane
  assert.equal((await store.query({})).totals.requests, 2);
  clock = now + 25 * day;
  await waitFor(async () => (await store.query({})).totals.requests === 1);
  assert.ok(logger.lines.some((l) => l.msg === "usage_retention"));
  await pipeline.close();
  await store.close();
  await t.cleanup();
});

Deno.test("pipeline: write() never throws, and one unreadable record does not stall the rest", async () => {
  const t = await setup();
  const store = createSqliteStore(":memory:");
  const { pipeline, logger } = pipelineOf(store, t.spillPath);
  const hostile = Object.defineProperty(makeRecord(1), "cost", {
    enumerable: true,
    get() {
      throw new Error("boom");
    },
  });
  pipeline.write(hostile);
  for (let i = 2; i < 12; i++) pipeline.write(makeRecord(i));
  await pipeline.flush();
  // the unreadable record is logged and left out; it does not stall the records behind it
  assert.ok(logger.lines.some((l) => l.msg === "usage_record_invalid"));
  assert.equal(pipeline.stats().invalid, 1);
  assert.equal((await store.query({})).totals.requests, 10);
  await pipeline.close();
  await store.close();
  await t.cleanup();
});

Deno.test("pipeline: replaySpill() retries a failing store with backoff until the file is replayed", async () => {
  const t = await setup();
  await Deno.mkdir(`${t.dir}/spill`);
  await Deno.writeTextFile(
    t.spillPath,
    Array.from({ length: 300 }, (_, i) => JSON.stringify({ ...makeRecord(i), uid: `u${i}` }) + "\n").join(""),
  );
  const store = controlledStore(createSqliteStore(t.dbPath));
  store.failNext = 6;
  const { pipeline } = pipelineOf(store, t.spillPath, { flushIntervalMs: 10, retryMaxMs: 40 });
  await pipeline.replaySpill();
  assert.equal(store.failNext, 0);
  assert.equal(await exists(t.spillPath), false);
  assert.equal(await exists(`${t.spillPath}.replaying`), false);
  await pipeline.close();
  await store.close();
  assert.equal(countRows(t.dbPath).rows, 300);
  await t.cleanup();
});
