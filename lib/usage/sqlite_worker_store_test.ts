import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { UsageQueryError } from "./query.ts";
import { countRows, makeRecord } from "../../tests/helpers/usage.ts";
import { tempDb } from "./sqlite_worker_test_helpers.ts";
import { parseConfigText } from "../config/load.ts";
import { createProviders } from "../providers/registry.ts";
import { denoRuntime } from "../runtime/deno.ts";
import { startServer } from "../serve.ts";

Deno.test("worker store: records inserted through the worker are in the database, once, and queryable", async () => {
  const { dir, path } = await tempDb();
  const store = await openSqliteWorkerStore(path);
  // More rows than one transaction of the in-thread store, with usage spread over two tokens.
  const records = Array.from({ length: 1500 }, (_, i) => ({
    ...makeRecord(i, { token: i % 3 === 0 ? "bob" : "alice", prompt_tokens: 2, completion_tokens: 1 }),
    uid: `u${i}`,
  }));
  await store.insert(records);
  await store.insert(records.slice(0, 100)); // a replayed batch: ignored by uid
  const report = await store.query({ group_by: ["token"] });
  assert.equal(report.totals.requests, 1500);
  assert.equal(report.totals.total_tokens, 4500);
  const bob = report.groups?.find((g) => g.key.token === "bob");
  assert.equal(bob?.requests, 500);
  assert.deepEqual(await store.sumSince("cfg_bob", new Date(0).toISOString()), {
    tokens: 1500,
    cost: 500 * 0.001,
  });
  await store.close();
  assert.equal(countRows(path).rows, 1500);
  assert.equal(countRows(path).distinct, 1500);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker store: answers equal the in-thread store's for the same records", async () => {
  const { dir, path } = await tempDb();
  const records = Array.from({ length: 40 }, (_, i) =>
    makeRecord(i, {
      time: new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString(),
      latency_ms: i,
      outcome: i % 5 === 0 ? "deny" : "allow",
      rule: i % 5 === 0 ? "token.rpm" : null,
    }));
  const direct = createSqliteStore(":memory:");
  await direct.insert(records);
  const worker = await openSqliteWorkerStore(path);
  await worker.insert(records);
  const q = { from: "2025-01-01T05:00:00Z", group_by: ["outcome" as const, "day" as const] };
  assert.deepEqual(await worker.query(q), await direct.query(q));
  assert.equal(await worker.deleteOlderThan("2025-01-01T10:00:00Z", 6), 6, "one batch");
  assert.equal(await worker.deleteOlderThan("2025-01-01T10:00:00Z", 6), 4);
  assert.equal((await worker.query({})).totals.requests, 30);
  await worker.close();
  await direct.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker store: a bad admin query is still a UsageQueryError naming its parameter", async () => {
  const { dir, path } = await tempDb();
  const store = await openSqliteWorkerStore(path);
  await assert.rejects(
    () => store.query({ from: "yesterday" }),
    (err: unknown) => err instanceof UsageQueryError && err.param === "from" && /ISO 8601/.test(err.message),
  );
  await store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker store: a database written by a newer gateway is refused at open, with no worker left running", async () => {
  const { dir, path } = await tempDb();
  const db = new DatabaseSync(path);
  db.exec("CREATE TABLE usage_schema (version INTEGER NOT NULL); INSERT INTO usage_schema VALUES (99)");
  db.close();
  // A worker left running would fail this test through Deno's sanitizers.
  await assert.rejects(() => openSqliteWorkerStore(path), /schema version 99 is newer/);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker store: a crashed worker fails only the calls in flight; the next call gets a fresh worker", async () => {
  const { dir, path } = await tempDb();
  const store = await openSqliteWorkerStore(path, {
    workerUrl: new URL("../../tests/helpers/crashing_sqlite_worker.ts", import.meta.url),
  });
  await store.insert([{ ...makeRecord(1), uid: "before" }]);
  await assert.rejects(
    () => store.insert([{ ...makeRecord(2, { request_id: "crash-the-worker" }), uid: "crash" }]),
    /usage store worker failed/,
  );
  await store.insert([{ ...makeRecord(3), uid: "after" }]);
  assert.equal((await store.query({})).totals.requests, 2);
  await store.close();
  await assert.rejects(() => store.insert([makeRecord(4)]), /closed/);
  assert.deepEqual(
    [...countRows(path).ids].sort(),
    [makeRecord(1).request_id, makeRecord(3).request_id].sort(),
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("startServer: when it cannot listen, it closes the usage database and stops its worker", async () => {
  const { dir, path } = await tempDb();
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const env = {};
  const loaded = parseConfigText(
    `providers: { local: { type: builtin } }
models: { m: { type: chat, targets: [ { provider: local, model: echo } ] } }
tokens: [ { name: t, environment: e, token: "gw-test-token-worker-0123456789", models: ["*"] } ]
usage: { sqlite: "${path}", spill: "${dir}/spill.jsonl" }
`,
    { source: "test", env },
  );
  assert.ok(loaded.ok);
  const runtime = { ...denoRuntime, writeStdout: () => {}, onReloadSignal: () => {} };
  const state = { config: loaded.config, providers: createProviders(loaded.config.providers, env) };
  await assert.rejects(() =>
    startServer(runtime, state, { host: "127.0.0.1", port: (taken.addr as Deno.NetAddr).port })
  );
  taken.close();
  // The database was closed: SQLite removes the WAL file when the last connection closes cleanly, and keeps it
  // while a worker still holds the database open.
  await assert.rejects(() => Deno.stat(`${path}-wal`), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});
