/**
 * The sums of `/admin/usage` and of a budget's seed answer the same from the SQLite store and the PostgreSQL
 * store (one query layer, two dialects), however large the counts the gateway accepts: a sum past SQLite's
 * 64-bit integers neither fails nor differs. The PostgreSQL case runs in CI always; off CI it skips only when
 * the database is unreachable.
 */
import assert from "node:assert/strict";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { isTokenCount } from "../openai/usage_counts.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import type { UsageDatabase } from "./store.ts";

const SINCE = "2024-01-01T00:00:00Z";
const MAX = Number.MAX_SAFE_INTEGER;

/** `n` records of the largest counts the gateway trusts: their sums pass 2^63 (SQLite's integer range). */
const HUGE_RECORDS = 1_100;

/** What each store answers for the records: the totals and groups of `/admin/usage`, and the budgets' seeds. */
async function sumsOf(db: UsageDatabase) {
  const report = await db.query({ group_by: ["day"] });
  return {
    totals: report.totals,
    groups: report.groups,
    token: await db.sumSince("cfg_alice", SINCE),
    team: await db.sumTeamSince("tm_a", SINCE),
  };
}

/** Runs `check` on the SQLite store, then (unless skipped off CI) on the PostgreSQL store, each holding `records`. */
async function onBothStores(
  t: Deno.TestContext,
  records: ReturnType<typeof makeRecord>[],
  check: (db: UsageDatabase, name: string) => Promise<void>,
): Promise<void> {
  const stored = records.map((r, i) => ({ ...r, uid: `sums-${i}` }));
  const sqlite = createSqliteStore(":memory:");
  try {
    await sqlite.insert(stored);
    await check(sqlite, "sqlite");
  } finally {
    await sqlite.close();
  }
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("usums");
  const pg = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 10_000 });
  try {
    await pg.insert(stored);
    await check(pg, "postgres");
  } finally {
    await pg.close();
    await dropSchema(schema);
  }
}

Deno.test("sums of trusted counts past 2^63 answer, exactly rounded, from both stores", async (t) => {
  assert.ok(isTokenCount(MAX));
  const records = Array.from(
    { length: HUGE_RECORDS },
    (_, i) =>
      makeRecord(i, { prompt_tokens: MAX, completion_tokens: MAX, saved_tokens: MAX, team_id: "tm_a" }),
  );
  // The exact sums, rounded once to a double (as `Number` rounds a BigInt).
  const sum = Number(BigInt(HUGE_RECORDS) * BigInt(MAX));
  assert.ok(sum > 2 ** 63);
  await onBothStores(t, records, async (db, name) => {
    const { totals, groups, token, team } = await sumsOf(db);
    assert.equal(totals.prompt_tokens, sum, name);
    assert.equal(totals.completion_tokens, sum, name);
    assert.equal(totals.saved_tokens, sum, name);
    assert.equal(totals.requests, HUGE_RECORDS, name);
    assert.deepEqual(groups.map((g) => [g.key.day, g.prompt_tokens]), [["2025-01-01", sum]], name);
    assert.equal(token.tokens, Number(2n * BigInt(HUGE_RECORDS) * BigInt(MAX)), name);
    assert.equal(team.tokens, token.tokens, name);
  });
});

Deno.test("sums of ordinary counts stay exact integers in both stores", async (t) => {
  // 2^53 - 1 in all, the largest sum a double holds exactly: one count off would show.
  const records = [
    makeRecord(0, { prompt_tokens: MAX - 10, completion_tokens: 3 }),
    makeRecord(1, { prompt_tokens: 7, completion_tokens: 0 }),
  ];
  await onBothStores(t, records, async (db, name) => {
    const { totals, token } = await sumsOf(db);
    assert.equal(totals.prompt_tokens, MAX - 3, name);
    assert.equal(totals.total_tokens, MAX, name);
    assert.equal(token.tokens, MAX, name);
    assert.equal((await db.sumSince("cfg_nobody", SINCE)).tokens, 0, name);
  });
});

Deno.test("money sums are the same number from both stores: 10,000 × $0.001 is $10, in totals, groups and seeds", async (t) => {
  const records = Array.from(
    { length: 10_000 },
    (_, i) => makeRecord(i, { cost: 0.001, cost_input: 0.001, saved_cost: 0.001, team_id: "tm_a" }),
  );
  await onBothStores(t, records, async (db, name) => {
    const { totals, groups, token, team } = await sumsOf(db);
    assert.deepEqual([totals.cost, totals.cost_input, totals.saved_cost], [10, 10, 10], name);
    assert.deepEqual(groups.map((g) => g.cost), [10], name);
    assert.equal(token.cost, 10, name);
    assert.equal(team.cost, 10, name);
  });
});

Deno.test("money sums of realistic prices are the double nearest their exact decimal, in both stores", async (t) => {
  // Prices per million tokens as the catalog gives them (at most 3 decimals): each cost is a whole number of
  // nanodollars, priced in doubles as the gateway prices it.
  const prices = [[2.5, 10], [0.075, 0.3], [1.25, 5], [0.15, 0.6], [3, 15]];
  let nanos = 0n;
  let seed = 11;
  const next = (k: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % k;
  const records = Array.from({ length: 3_000 }, (_, i) => {
    const [input, output] = prices[next(prices.length)];
    const [prompt, completion] = [next(200_000), next(8_000)];
    nanos += BigInt(prompt * Math.round(input * 1_000) + completion * Math.round(output * 1_000));
    return makeRecord(i, { cost: (prompt * input + completion * output) / 1e6 });
  });
  const exact = Number(nanos) / 1e9;
  await onBothStores(t, records, async (db, name) => {
    const { totals, token } = await sumsOf(db);
    assert.equal(totals.cost, exact, name);
    assert.equal(token.cost, exact, name);
  });
});

Deno.test("a record's absurd cost counts as at most 2^63 - 1 picodollars, either sign, and fails neither store", async (t) => {
  const records = [
    makeRecord(0, { cost: 1e300, team_id: "tm_a" }),
    makeRecord(1, { cost: 0.5, team_id: "tm_a" }),
    makeRecord(2, { cost: -1e300 }),
  ];
  const most = 2n ** 63n - 1n;
  await onBothStores(t, records, async (db, name) => {
    const { totals, team } = await sumsOf(db);
    assert.equal(totals.cost, Number(most + 500_000_000_000n - 2n ** 63n) / 1e12, name);
    assert.equal(team.cost, Number(most + 500_000_000_000n) / 1e12, name);
    assert.equal((await db.query({ to: "2025-01-01T00:00:01Z" })).totals.cost, Number(most) / 1e12, name);
    assert.equal((await db.query({ from: "2025-01-01T00:00:02Z" })).totals.cost, -(2 ** 63) / 1e12, name);
  });
});
