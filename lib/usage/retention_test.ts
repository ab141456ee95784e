import assert from "node:assert/strict";
import { createMemoryLogger } from "../log.ts";
import { runResponsesRetention, runRetention, startResponsesRetention, startRetention } from "./retention.ts";
import { createMemoryResponsesStore } from "./responses_store_memory.ts";
import type { ResponsesStore } from "./responses_store.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import type { UsageStore } from "./store.ts";
import { makeRecord, waitFor } from "../../tests/helpers/usage.ts";

const day = 86_400_000;
const now = Date.UTC(2025, 5, 1);
const iso = (ms: number) => new Date(ms).toISOString();

async function storeWithAges(...agesInDays: number[]): Promise<UsageStore> {
  const store = createSqliteStore(":memory:");
  await store.insert(
    agesInDays.map((age, i) => ({ ...makeRecord(i, { time: iso(now - age * day) }), uid: `u${i}` })),
  );
  return store;
}

Deno.test("retention: deletes only records older than the cut-off, and logs how many and from when", async () => {
  const store = await storeWithAges(40, 10, 1);
  const logger = createMemoryLogger();
  await runRetention({ store, retentionMs: 30 * day, now: () => now, logger });
  assert.equal((await store.query({})).totals.requests, 2);
  assert.deepEqual(logger.lines, [
    { level: "info", msg: "usage_retention", deleted: 1, before: iso(now - 30 * day) },
  ]);
  // nothing older left: nothing deleted, nothing logged
  await runRetention({ store, retentionMs: 30 * day, now: () => now, logger });
  assert.equal(logger.lines.length, 1);
  await store.close();
});

Deno.test("retention: a backlog is deleted in batches, each its own statement, until one comes back short", async () => {
  const store = await storeWithAges(40, 41, 42, 43, 44, 45, 46, 1, 2);
  const statements: number[] = [];
  const counted: UsageStore = {
    ...store,
    deleteOlderThan: async (iso, limit) => {
      const n = await store.deleteOlderThan(iso, limit);
      statements.push(n);
      return n;
    },
  };
  const logger = createMemoryLogger();
  await runRetention({ store: counted, retentionMs: 30 * day, retentionBatch: 2, now: () => now, logger });
  assert.deepEqual(statements, [2, 2, 2, 1]);
  assert.equal((await store.query({})).totals.requests, 2, "the two newer records are kept");
  assert.deepEqual(logger.lines, [
    { level: "info", msg: "usage_retention", deleted: 7, before: iso(now - 30 * day) },
  ]);
  await store.close();
});

Deno.test("retention: a run stops after its time; the next run deletes the rest", async () => {
  const store = await storeWithAges(40, 41, 42, 43, 44, 45, 46, 1);
  let clock = now;
  const slow: UsageStore = {
    ...store,
    deleteOlderThan: (iso, limit) => {
      clock += 1_000; // each statement takes a second
      return store.deleteOlderThan(iso, limit);
    },
  };
  const logger = createMemoryLogger();
  const options = {
    store: slow,
    retentionMs: 30 * day,
    retentionBatch: 2,
    retentionMaxRunMs: 2_000,
    now: () => clock,
    logger,
  };
  await runRetention(options);
  assert.equal((await store.query({})).totals.requests, 4, "two statements in the run's two seconds");
  assert.equal(logger.lines[0].more, true);
  await runRetention(options);
  assert.equal((await store.query({})).totals.requests, 1);
  await store.close();
});

Deno.test("retention: a failing delete is logged as a warning, never thrown", async () => {
  const store = await storeWithAges(40);
  const failing: UsageStore = { ...store, deleteOlderThan: () => Promise.reject(new Error("disk gone")) };
  const logger = createMemoryLogger();
  await runRetention({ store: failing, retentionMs: day, now: () => now, logger });
  assert.deepEqual(logger.lines, [
    { level: "warn", msg: "usage_retention_failed", before: iso(now - day), error: "disk gone" },
  ]);
  await store.close();
});

Deno.test("retention: without a store or a retention period nothing is deleted", async () => {
  const store = await storeWithAges(400);
  const logger = createMemoryLogger();
  await runRetention({ store, now: () => now, logger });
  await runRetention({ store: null, retentionMs: day, now: () => now, logger });
  assert.equal((await store.query({})).totals.requests, 1);
  assert.equal(logger.lines.length, 0);
  await store.close();
});

Deno.test("retention: runs once at start, then every interval until stopped", async () => {
  const store = await storeWithAges(40, 10, 1);
  let clock = now;
  const scheduled: Promise<void>[] = [];
  const stop = startRetention(
    { store, retentionMs: 30 * day, retentionIntervalMs: 20, now: () => clock, logger: createMemoryLogger() },
    (run) => scheduled.push(run()),
  );
  assert.equal(scheduled.length, 1, "the first run is handed over at once");
  await scheduled[0];
  assert.equal((await store.query({})).totals.requests, 2);
  clock = now + 25 * day;
  await waitFor(async () => (await store.query({})).totals.requests === 1);
  stop();
  await Promise.all(scheduled);
  const runs = scheduled.length;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(scheduled.length, runs, "no run after stop");
  await store.close();
});

Deno.test("retention: without a retention period only the (no-op) start run is scheduled", async () => {
  const store = await storeWithAges(400);
  let runs = 0;
  const stop = startRetention(
    { store, retentionIntervalMs: 5, now: () => now, logger: createMemoryLogger() },
    (run) => {
      runs++;
      void run();
    },
  );
  await new Promise((r) => setTimeout(r, 40));
  stop();
  assert.equal(runs, 1);
  assert.equal((await store.query({})).totals.requests, 1);
  await store.close();
});

Deno.test("retention: `retention: 0` keeps every record (what docs/configuration.md says it means)", async () => {
  const store = await storeWithAges(4000, 1);
  const logger = createMemoryLogger();
  await runRetention({ store, retentionMs: 0, now: () => now, logger });
  assert.equal((await store.query({})).totals.requests, 2);
  assert.deepEqual(logger.lines, []);
  await store.close();
});

async function responsesWithAges(...agesInDays: number[]): Promise<ResponsesStore> {
  const store = createSqliteStore(":memory:").responses;
  for (const [i, age] of agesInDays.entries()) {
    await store.put({
      id: `resp_${i}`,
      owner: "alice",
      environment: "prod",
      created_at: (now - age * day) / 1000,
      alias: "chat-default",
      provider: "openai",
      native: false,
      previous_response_id: null,
      input_items: [],
      response: { id: `resp_${i}`, object: "response", output: [] },
    });
  }
  return store;
}

const kept = async (store: ResponsesStore, count: number) => {
  const found = await Promise.all(Array.from({ length: count }, (_, i) => store.get(`resp_${i}`, "alice")));
  return found.flatMap((r) => r === null ? [] : [r.id]);
};

Deno.test("responses retention: prunes only responses older than the cut-off, and logs how many", async () => {
  const store = await responsesWithAges(40, 29, 1);
  const logger = createMemoryLogger();
  await runResponsesRetention({ store, retentionMs: 30 * day, now: () => now, logger });
  assert.deepEqual(await kept(store, 3), ["resp_1", "resp_2"]);
  assert.deepEqual(logger.lines, [
    { level: "info", msg: "responses_retention", deleted: 1, before: iso(now - 30 * day) },
  ]);
  await runResponsesRetention({ store, retentionMs: 30 * day, now: () => now, logger });
  assert.equal(logger.lines.length, 1, "nothing pruned, nothing logged");
});

Deno.test("responses retention: a run stops after its time; the next run prunes the rest", async () => {
  const store = await responsesWithAges(40, 41, 42, 43, 44, 45, 46, 1);
  let clock = now;
  const slow: ResponsesStore = {
    ...store,
    prune: (before, limit) => {
      clock += 1_000; // each batch takes a second
      return store.prune(before, limit);
    },
  };
  const logger = createMemoryLogger();
  const options = {
    store: slow,
    retentionMs: 30 * day,
    retentionBatch: 2,
    retentionMaxRunMs: 2_000,
    now: () => clock,
    logger,
  };
  await runResponsesRetention(options);
  assert.equal((await kept(store, 8)).length, 4, "two batches in the run's two seconds");
  assert.deepEqual(logger.lines, [
    { level: "info", msg: "responses_retention", deleted: 4, before: iso(now - 30 * day), more: true },
  ]);
  await runResponsesRetention(options);
  assert.deepEqual(await kept(store, 8), ["resp_7"], "the next run prunes the rest");
  assert.deepEqual(logger.lines[1], {
    level: "info",
    msg: "responses_retention",
    deleted: 3,
    before: iso(now + 2_000 - 30 * day),
  });
});

Deno.test("responses retention: a failing prune is logged as a warning, never thrown", async () => {
  const store = createMemoryResponsesStore();
  const failing: ResponsesStore = { ...store, prune: () => Promise.reject(new Error("disk gone")) };
  const logger = createMemoryLogger();
  await runResponsesRetention({ store: failing, retentionMs: day, now: () => now, logger });
  assert.deepEqual(logger.lines, [
    { level: "warn", msg: "responses_retention_failed", before: iso(now - day), error: "disk gone" },
  ]);
});

Deno.test("responses retention: runs at start, then every interval until stopped, on its own period", async () => {
  const store = await responsesWithAges(40, 10, 1);
  let clock = now;
  const stop = startResponsesRetention({
    store,
    retentionMs: 30 * day,
    retentionIntervalMs: 20,
    now: () => clock,
    logger: createMemoryLogger(),
  });
  await waitFor(async () => (await kept(store, 3)).length === 2);
  clock = now + 25 * day;
  await waitFor(async () => (await kept(store, 3)).length === 1);
  assert.deepEqual(await kept(store, 3), ["resp_2"]);
  stop();
});
