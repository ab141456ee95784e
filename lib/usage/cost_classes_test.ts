/**
 * The cost by token class (`cost_input`, `cost_cached`, `cost_cache_write`, `cost_output`, `cost_reasoning`)
 * in both stores: each record's split round-trips through the request log as written (a record written without
 * it reads back with 0s), and `/admin/usage` sums it in the totals and per token and per alias, alike in SQLite
 * (on the request thread and in its worker) and PostgreSQL (a private schema, dropped after). The PostgreSQL case
 * runs in CI always; off CI it skips only when the database is unreachable.
 *
 * @module
 */
import assert from "node:assert/strict";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { COST_CLASS_COLUMNS, type UsageRecord, type UsageTotals } from "./record.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import type { StoredUsageRecord, UsageDatabase } from "./store.ts";

/** A split that adds up to its cost, as lib/pricing/cost.ts makes it. */
function split(input: number, cached: number, write: number, output: number, reasoning: number, search = 0) {
  return {
    cost: input + cached + write + output + reasoning + search,
    cost_input: input,
    cost_cached: cached,
    cost_cache_write: write,
    cost_output: output,
    cost_reasoning: reasoning,
    cost_web_search: search,
  };
}

/** Two tokens over two aliases, with cached reads, cache writes and reasoning in different places. */
function records(): StoredUsageRecord[] {
  const {
    cost_input: _i,
    cost_cached: _c,
    cost_cache_write: _w,
    cost_output: _o,
    cost_reasoning: _r,
    cost_web_search: _s,
    ...old
  } = makeRecord(5, { token: "carol", alias: "chat-fast", cost: 0.25 });
  return [
    makeRecord(1, split(0.5, 0.125, 0, 1, 0)),
    makeRecord(2, split(0.25, 0, 0.75, 0.5, 2)),
    makeRecord(3, { token: "bob", alias: "chat-fast", ...split(1, 0.25, 0.5, 0.25, 0, 0.5) }),
    makeRecord(4, { token: "bob", ...split(0, 0, 0, 0, 0), outcome: "deny", status: 429 }),
    // Written as a gateway from before the split wrote it: no classes at all.
    old,
  ].map((r, i) => ({ ...r, uid: `c${i}` }));
}

const classesOf = (t: Partial<Pick<UsageRecord, typeof COST_CLASS_COLUMNS[number]>> & { cost: number }) => [
  t.cost,
  ...COST_CLASS_COLUMNS.map((c) => t[c]),
];

async function assertCostClasses(db: UsageDatabase): Promise<void> {
  const written = records();
  await db.insert(written);
  // The request log gives each record's split back as written; the old one has 0s.
  const log = new Map((await db.listRecords({})).data.map((r) => [r.request_id, r]));
  assert.deepEqual(log.get("req_2"), makeRecord(2, split(0.25, 0, 0.75, 0.5, 2)));
  assert.deepEqual(classesOf(log.get("req_1")!), [1.625, 0.5, 0.125, 0, 1, 0, 0]);
  assert.deepEqual(classesOf(log.get("req_5")!), [0.25, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(
    classesOf(log.get("req_3")!),
    [2.5, 1, 0.25, 0.5, 0.25, 0, 0.5],
    "web searches kept apart",
  );

  // The sums (binary fractions: exact in both engines).
  const totals = (await db.query({})).totals;
  assert.deepEqual(classesOf(totals), [7.875, 1.75, 0.375, 1.25, 1.75, 2, 0.5]);
  const by = async (key: "token" | "alias") =>
    Object.fromEntries(
      (await db.query({ group_by: [key] })).groups.map((g) => [String(g.key[key]), classesOf(g)]),
    );
  assert.deepEqual(await by("token"), {
    alice: [5.125, 0.75, 0.125, 0.75, 1.5, 2, 0],
    bob: [2.5, 1, 0.25, 0.5, 0.25, 0, 0.5],
    carol: [0.25, 0, 0, 0, 0, 0, 0],
  });
  assert.deepEqual(await by("alias"), {
    "chat-default": [5.125, 0.75, 0.125, 0.75, 1.5, 2, 0],
    "chat-fast": [2.75, 1, 0.25, 0.5, 0.25, 0, 0.5],
  });
  const none: UsageTotals = (await db.query({ token: "nobody" })).totals;
  assert.deepEqual(classesOf(none), [0, 0, 0, 0, 0, 0, 0]);
}

Deno.test("cost classes: round-trip and sums in the SQLite store, on the request thread and in the worker", async () => {
  const memory = createSqliteStore(":memory:");
  try {
    await assertCostClasses(memory);
  } finally {
    await memory.close();
  }
  const dir = await Deno.makeTempDir({ prefix: "cost-classes-" });
  const worker = await openSqliteWorkerStore(`${dir}/usage.sqlite`);
  try {
    await assertCostClasses(worker);
  } finally {
    await worker.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cost classes: round-trip and sums in the PostgreSQL store", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("costcls");
  const pg = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  try {
    await assertCostClasses(pg);
  } finally {
    await pg.close();
    await dropSchema(schema);
  }
});
