import assert from "node:assert/strict";
import type { LogValue } from "../log.ts";
import { createMemoryLogger } from "../log.ts";
import { SpillReplay, type SpillReplayOptions } from "./spill_replay.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import type { UsageStore } from "./store.ts";
import { controlledStore, countRows, exists, makeRecord } from "../../tests/helpers/usage.ts";

/** A replay over a fresh directory, with the health reports it makes recorded. */
async function setup(store: (dbPath: string) => UsageStore | null, extra: Partial<SpillReplayOptions> = {}) {
  const dir = await Deno.makeTempDir();
  const dbPath = `${dir}/usage.sqlite`;
  const health = { succeeded: 0, failed: [] as Record<string, LogValue>[] };
  const logger = createMemoryLogger();
  const spillPath = `${dir}/spill/usage-spill.jsonl`;
  const replay = new SpillReplay({
    store: store(dbPath),
    spillPath,
    batchSize: 100,
    retryMaxMs: 1_000,
    logger,
    health: {
      succeeded: () => health.succeeded++,
      failed: (_e, fields) => health.failed.push(fields),
    },
    ...extra,
  });
  const spillN = async (n: number) => {
    // Every other record a cache hit: the spill file keeps the cache columns as the store does.
    const hit = { cache: "hit", saved_tokens: 10, saved_cost: 0.5 };
    for (let i = 0; i < n; i++) replay.append({ record: makeRecord(i, i % 2 ? {} : hit), uid: `u${i}` });
    await replay.flush();
  };
  /** Steps until the replay reports `done` (or `failed`/`error`), returning every outcome. */
  const run = async () => {
    const steps: string[] = [];
    for (let i = 0; i < 100; i++) {
      const step = await replay.step();
      steps.push(step);
      if (step !== "more") return steps;
    }
    throw new Error("the replay never finished");
  };
  return { dir, dbPath, spillPath, replay, health, logger, spillN, run };
}

Deno.test("spill replay: spilled records are replayed into the store batch by batch, then the file is gone", async () => {
  const store = createSqliteStore(":memory:");
  const t = await setup(() => store);
  await t.spillN(250);
  assert.equal(t.replay.spilled, 250);
  assert.equal(t.replay.wanted, true, "a spill asks for a replay");
  // three batches (100, 100, 50), the end of the file, then nothing left
  assert.deepEqual(await t.run(), ["more", "more", "more", "more", "done"]);
  assert.equal(t.replay.replayed, 250);
  assert.equal(t.replay.wanted, false);
  assert.equal(t.health.succeeded, 3);
  const totals = (await store.query({})).totals;
  assert.deepEqual([totals.requests, totals.cache_hits, totals.saved_tokens, totals.saved_cost], [
    250,
    125,
    1250,
    62.5,
  ]);
  assert.equal(await exists(t.spillPath), false);
  assert.equal(await exists(`${t.spillPath}.replaying`), false);
  await t.replay.close();
  await store.close();
  await Deno.remove(t.dir, { recursive: true });
});

Deno.test("spill replay: a refused batch is kept and retried as is, and each record is stored once", async () => {
  let store: ReturnType<typeof controlledStore> | null = null;
  const t = await setup((dbPath) => (store = controlledStore(createSqliteStore(dbPath))));
  await t.spillN(150);
  store!.failNext = 2;
  assert.equal(await t.replay.step(), "failed");
  assert.equal(await t.replay.step(), "failed");
  assert.deepEqual(t.health.failed, [{ records: 100, replay: true }, { records: 100, replay: true }]);
  assert.equal(t.replay.replayed, 0);
  assert.deepEqual(await t.run(), ["more", "more", "more", "done"]);
  assert.equal(t.replay.replayed, 150, "the kept batch, then the rest: nothing read twice");
  assert.equal(store!.calls, 4);
  await t.replay.close();
  await store!.close();
  const rows = countRows(t.dbPath);
  assert.equal(rows.rows, 150);
  assert.equal(rows.distinct, 150);
  await Deno.remove(t.dir, { recursive: true });
});

Deno.test("spill replay: stop() keeps the rest in .replaying, and the next replay finishes it once", async () => {
  const store = createSqliteStore(":memory:");
  const t = await setup(() => store);
  await t.spillN(300);
  assert.equal(await t.replay.step(), "more");
  await t.replay.stop();
  await t.replay.close();
  assert.equal(await exists(`${t.spillPath}.replaying`), true, "the unfinished replay is kept");
  assert.equal((await store.query({})).totals.requests, 100);

  const next = new SpillReplay({
    store,
    spillPath: t.spillPath,
    batchSize: 100,
    retryMaxMs: 1_000,
    logger: createMemoryLogger(),
    health: { succeeded() {}, failed() {} },
  });
  while ((await next.step()) === "more");
  assert.equal(
    next.replayed,
    300,
    "the kept file is replayed from its start; the store ignores the duplicates",
  );
  assert.equal((await store.query({})).totals.requests, 300);
  assert.equal(await exists(`${t.spillPath}.replaying`), false);
  await next.close();
  await store.close();
  await Deno.remove(t.dir, { recursive: true });
});

Deno.test("spill replay: an unreadable spill file is logged and not tried again for retryMaxMs", async () => {
  const store = createSqliteStore(":memory:");
  const t = await setup(() => store, { retryMaxMs: 60_000 });
  await Deno.mkdir(`${t.spillPath}.replaying`, { recursive: true }); // a directory cannot be read as lines
  assert.equal(t.replay.ready(Date.now()), true);
  const before = Date.now();
  assert.equal(await t.replay.step(), "error");
  assert.ok(t.logger.lines.some((l) => l.msg === "usage_spill_replay_failed"));
  assert.equal(t.replay.ready(Date.now()), false);
  assert.equal(t.replay.ready(before + 60_000 + 1_000), true);
  await t.replay.close();
  await store.close();
  await Deno.remove(t.dir, { recursive: true });
});

Deno.test("spill replay: without a store records stay in the spill file and nothing is replayed", async () => {
  const t = await setup(() => null);
  assert.equal(t.replay.wanted, false);
  await t.spillN(10);
  assert.equal(t.replay.wanted, false);
  assert.equal(await t.replay.step(), "done");
  assert.equal(await exists(t.spillPath), true);
  await t.replay.close();
  await Deno.remove(t.dir, { recursive: true });
});
