/**
 * The SQLite usage store's table and writes: its schema version, columns and indexes on disk, re-inserted
 * batches kept once, malformed values coerced (in the row both stores write, `usageRow`), and calls after close.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSqliteStore, USAGE_SCHEMA_VERSION } from "./sqlite_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { dropSchema, queryOnce, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";

Deno.test("sqlite store: schema version, columns and indexes", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/nested/dir/usage.sqlite`;
  const store = createSqliteStore(path);
  await store.insert([makeRecord(1)]);
  await store.close();
  const db = new DatabaseSync(path);
  const indexes = db.prepare(
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage'",
  )
    .all().map((r) => String(r.name)).sort();
  assert.deepEqual(indexes, [
    "usage_alias_time",
    "usage_environment_time",
    "usage_outcome_time",
    "usage_provider_time",
    "usage_team_id_time",
    "usage_team_time",
    "usage_time",
    "usage_time_uid",
    "usage_token_id_time",
    "usage_token_time",
    "usage_trace_id",
    "usage_uid",
    "usage_upstream_model_time",
  ]);
  const unique = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'usage_uid'").get();
  assert.match(String(unique?.sql), /UNIQUE/);
  assert.equal(db.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
  assert.equal(String(db.prepare("PRAGMA journal_mode").get()?.journal_mode), "wal");
  const columns = db.prepare("PRAGMA table_info(usage)").all().map((r) => String(r.name));
  assert.deepEqual(columns.sort(), [...Object.keys(makeRecord(1)), "uid"].sort());
  const row = db.prepare("SELECT stream, tokens_estimated FROM usage").get();
  assert.deepEqual({ ...row }, { stream: 0, tokens_estimated: 0 });
  db.close();
  // reopening an existing database keeps its rows
  const again = createSqliteStore(path);
  assert.equal((await again.query({})).totals.requests, 1);
  await again.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("sqlite store: INSERT OR IGNORE makes re-inserting a batch idempotent", async () => {
  const store = createSqliteStore(":memory:");
  const withUid = [1, 2, 3].map((i) => ({ ...makeRecord(i), uid: `u${i}` }));
  await store.insert(withUid);
  await store.insert(withUid);
  await store.insert([withUid[0], { ...makeRecord(4), uid: "u4" }]);
  assert.equal((await store.query({})).totals.requests, 4);
  // without a uid, the same request at the same time is the same record…
  await store.insert([makeRecord(9)]);
  await store.insert([makeRecord(9)]);
  assert.equal((await store.query({})).totals.requests, 5);
  // …but a client reusing a request id on another request is still counted (distinct uids)
  await store.insert([{ ...makeRecord(1), uid: "other" }]);
  assert.equal((await store.query({})).totals.requests, 6);
  await store.close();
});

Deno.test("sqlite store: a batch of several INSERT statements keeps every row once, each with its own values", async () => {
  // 60 rows, each batch inserted twice: in one transaction (the worker's), two statements of 25 rows and 10 rows
  // one by one; in the request thread's 32-row transactions, a statement and 7 single rows, then one and 3.
  for (const rowsPerTransaction of [32, 1000]) {
    const store = createSqliteStore(":memory:", { rowsPerTransaction });
    const records = Array.from({ length: 60 }, (_, i) => ({
      ...makeRecord(i, { prompt_tokens: i, completion_tokens: 2 * i, latency_ms: 1000 + i }),
      uid: `u${i}`,
    }));
    // Duplicates inside one statement (row 3 again at 10), across statements (row 5 at 30), in the tail (row 40
    // at 55): INSERT OR IGNORE keeps the first.
    const batch = records.map((r, i) =>
      i === 10 ? records[3] : i === 30 ? records[5] : i === 55 ? records[40] : r
    );
    await store.insert(batch);
    await store.insert(batch);
    const stored = (await store.listRecords({ limit: 100 })).data;
    const expected = batch.filter((r, i) => batch.indexOf(r) === i);
    assert.equal(stored.length, 57);
    const byRequest = new Map(stored.map((r) => [r.request_id, r]));
    for (const r of expected) {
      const row = byRequest.get(r.request_id)!;
      assert.ok(row !== undefined, r.request_id);
      assert.deepEqual(
        [row.time, row.prompt_tokens, row.completion_tokens, row.latency_ms],
        [r.time, r.prompt_tokens, r.completion_tokens, r.latency_ms],
      );
    }
    const { totals } = await store.query({});
    assert.equal(totals.requests, 57);
    assert.equal(totals.prompt_tokens, expected.reduce((n, r) => n + r.prompt_tokens, 0));
    await store.close();
  }
});

Deno.test("sqlite store: malformed values are coerced rather than failing the batch", async () => {
  const store = createSqliteStore(":memory:");
  const bad = {
    ...makeRecord(1),
    latency_ms: Number.NaN,
    status: Infinity,
    time: "2025-01-01T00:00:01+00:00",
  };
  await store.insert([bad, makeRecord(2)]);
  const { totals } = await store.query({ from: "2025-01-01T00:00:01Z", to: "2025-01-01T00:00:02Z" });
  assert.equal(totals.requests, 1, "time stored in canonical form");
  assert.equal((await store.query({})).totals.requests, 2);
  await store.close();
});

Deno.test("usage row: a count past bigint is clamped, so a PostgreSQL batch holding it is written, not retried forever", async () => {
  const schema = randomSchema("usagerow");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  try {
    // One absurd record (a count no upstream check let through, e.g. written by an older gateway) beside a good one.
    const absurd = makeRecord(1, { prompt_tokens: 1e19, completion_tokens: -1e20, saved_tokens: 1e300 });
    await db.insert([absurd, makeRecord(2)]);
    const rows = await queryOnce(
      `SELECT request_id, prompt_tokens, completion_tokens, saved_tokens FROM "${schema}".usage ORDER BY request_id`,
    );
    const values = (
      r: Record<string, unknown>,
    ) => [r.request_id, Number(r.prompt_tokens), Number(r.completion_tokens), Number(r.saved_tokens)];
    assert.deepEqual(rows.map(values), [
      ["req_1", Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
      ["req_2", 10, 5, 0],
    ]);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
});

Deno.test("sqlite store: calls after close reject", async () => {
  const store = createSqliteStore(":memory:");
  await store.close();
  await store.close();
  await assert.rejects(() => store.insert([makeRecord(1)]), /closed/);
  await assert.rejects(() => store.query({}), /closed/);
});
