/**
 * A grouped usage report is one bounded page of groups, alike in both stores (SQLite in memory, PostgreSQL in
 * a private schema): at most `limit` groups (1000 by default), in their keys' order, `has_more` and
 * `next_offset` while groups remain; paging through gives exactly the groups of one big page, each with its
 * own denials (the page's denials query is bounded by its first and last keys, NULLs and several keys
 * included), and the overall totals on every page.
 */
import assert from "node:assert/strict";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { DEFAULT_GROUP_LIMIT, MAX_GROUP_LIMIT } from "./group_page.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { runUsageQuery, type SqlValue, UsageQueryError } from "./query.ts";
import type { UsageGroupKey, UsageReport } from "./record.ts";
import { registerSqliteFunctions } from "./sql_dialect.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { DatabaseSync } from "node:sqlite";
import type { StoredUsageRecord, UsageDatabase } from "./store.ts";

const T0 = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;

/** Records over `minutes` distinct minutes, with tokens, rules and denials that put NULLs at page edges. */
function records(minutes: number): StoredUsageRecord[] {
  const tokens = [null, "alice", "Bob", "_ops"];
  const rules = [null, "token.rpm", "alias.content:pii", "token.rpm,alias.content:pii"];
  return Array.from({ length: minutes }, (_, i) => {
    const outcome = i % 3 === 0 ? "deny" : i % 3 === 1 ? "modify" : "allow";
    return {
      ...makeRecord(i, {
        time: new Date(T0 + i * MINUTE + (i % 7) * 1000).toISOString(),
        token: tokens[i % tokens.length],
        outcome,
        rule: outcome === "allow" ? null : rules[i % rules.length],
        status: outcome === "deny" ? 429 : 200,
        latency_ms: 10 + (i % 13),
      }),
      uid: `u${i}`,
    };
  });
}

/** Every group of `keys`, page by page (`limit` a page), with each page's checks. */
async function pageThrough(db: UsageDatabase, keys: UsageGroupKey[], limit: number): Promise<UsageReport> {
  const all = await db.query({ group_by: keys, limit: MAX_GROUP_LIMIT });
  assert.equal(all.has_more, false);
  assert.equal(all.next_offset, null);
  const groups: UsageReport["groups"] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const page: UsageReport = await db.query({ group_by: keys, limit, offset });
    assert.ok(page.groups.length <= limit, `a page of ${limit} holds ${page.groups.length}`);
    assert.deepEqual(page.totals, all.totals, "the overall totals on every page");
    assert.equal(page.has_more, offset + page.groups.length < all.groups.length);
    groups.push(...page.groups);
    offset = page.next_offset;
  }
  assert.deepEqual(groups, all.groups, `pages of ${limit} by ${keys} are the one big page`);
  return all;
}

async function pagesHold(db: UsageDatabase): Promise<void> {
  await db.insert(records(1_500));
  const byMinute = await db.query({ group_by: ["minute"] });
  assert.equal(byMinute.groups.length, DEFAULT_GROUP_LIMIT, "the default page");
  assert.equal(byMinute.has_more, true);
  assert.equal(byMinute.next_offset, DEFAULT_GROUP_LIMIT);
  const rest = await db.query({ group_by: ["minute"], offset: DEFAULT_GROUP_LIMIT });
  assert.equal(rest.groups.length, 500);
  assert.equal(rest.has_more, false);
  assert.equal(rest.next_offset, null);
  const minutes = [...byMinute.groups, ...rest.groups].map((g) => g.key.minute);
  assert.deepEqual(minutes, [...minutes].sort(), "in time order");
  assert.equal(new Set(minutes).size, 1_500);
  const past = await db.query({ group_by: ["minute"], offset: 5_000 });
  assert.deepEqual([past.groups, past.has_more, past.next_offset], [[], false, null]);

  for (
    const keys of [["token"], ["token", "rule"], ["hour", "token"], ["rule", "token"]] as UsageGroupKey[][]
  ) {
    const all = await pageThrough(db, keys, 3);
    if (!keys.includes("rule")) {
      // Each denial is in exactly one group: a page's denials are its groups' own, none lost or repeated.
      const summed: Record<string, number> = {};
      for (const g of all.groups) {
        for (const [rule, n] of Object.entries(g.denials)) summed[rule] = (summed[rule] ?? 0) + n;
      }
      assert.deepEqual(summed, all.totals.denials, `denials by ${keys}`);
    }
  }
  await pageThrough(db, ["hour"], 7);

  for (
    const [q, param] of [[{ limit: 0 }, "limit"], [{ limit: MAX_GROUP_LIMIT + 1 }, "limit"], [
      { limit: 1.5 },
      "limit",
    ], [
      { offset: -1 },
      "offset",
    ]] as const
  ) {
    await assert.rejects(db.query({ group_by: ["minute"], ...q }), (err: unknown) => {
      assert.ok(err instanceof UsageQueryError);
      assert.equal(err.param, param);
      return true;
    });
  }
}

Deno.test("usage groups: bounded pages in key order, every group once with its denials (SQLite)", async () => {
  const db = createSqliteStore(":memory:");
  try {
    await pagesHold(db);
  } finally {
    await db.close();
  }
});

Deno.test("usage groups: bounded pages in key order, every group once with its denials (PostgreSQL)", async () => {
  const schema = randomSchema("groups");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 10_000 });
  try {
    await pagesHold(db);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
});

Deno.test("usage groups: a page reads only its own groups' denials, not every group's", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = createSqliteStore(`${dir}/usage.sqlite`);
    await store.insert(records(1_500));
    await store.close();
    const db = new DatabaseSync(`${dir}/usage.sqlite`);
    registerSqliteFunctions(db);
    const rowsRead: number[] = [];
    const all = (sql: string, params: readonly SqlValue[]) => {
      const rows = db.prepare(sql).all(...params) as Record<string, unknown>[];
      rowsRead.push(rows.length);
      return rows;
    };
    try {
      const page = runUsageQuery({ group_by: ["minute"], limit: 10, offset: 700 }, all);
      assert.equal(page.groups.length, 10);
      assert.ok(page.groups.some((g) => Object.keys(g.denials).length > 0), "the page has denials");
      // The overall totals and denials, the page (10 + 1 rows), and the page's denials: no query reads ~500
      // minutes of denials to keep a handful.
      assert.ok(Math.max(...rowsRead) <= 11, `rows read per query: ${rowsRead}`);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
