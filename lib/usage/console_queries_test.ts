/**
 * The admin console's reads on both stores: the upstream model and rule filters, the new group keys
 * (`upstream_model`, `rule`, `endpoint`, `minute`) and the request log (`listRecords`) answer the same on
 * SQLite and PostgreSQL (a private schema, dropped after) for the same records, agree with a plain TypeScript
 * reading of those records, and page without duplicates or gaps while records keep arriving.
 */
import assert from "node:assert/strict";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { UsageQueryError } from "./query.ts";
import {
  COST_CLASS_COLUMNS,
  type PolicyOutcome,
  type RecordListQuery,
  type UsageGroupKey,
  type UsageQuery,
  type UsageRecord,
} from "./record.ts";
import { decodeCursor, encodeCursor } from "./record_list.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import type { StoredUsageRecord, UsageDatabase } from "./store.ts";

const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);
const MINUTE = 60_000;

/** Both stores, filled with the same records; the PostgreSQL schema is dropped afterwards. */
async function withStores(
  records: StoredUsageRecord[],
  fn: (stores: [string, UsageDatabase][]) => Promise<void>,
): Promise<void> {
  const schema = randomSchema("console");
  const sqlite = createSqliteStore(":memory:");
  const pg = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 10_000 });
  try {
    await sqlite.insert(records);
    await pg.insert(records);
    await fn([["sqlite", sqlite], ["postgres", pg]]);
  } finally {
    await sqlite.close();
    await pg.close();
    await dropSchema(schema);
  }
}

const RULES: Record<PolicyOutcome, (string | null)[]> = {
  allow: [null],
  deny: ["token.rpm", "alias.content:secret", "token.budget"],
  modify: [
    "alias.content:pii",
    "token.max_tokens",
    "alias.content:pii,token.max_tokens",
    "alias.content:ssn,alias.content:pii",
  ],
};

/** The `n`th trace id of the data set: 32 lower-case hex digits, as OpenTelemetry writes them. */
const traceId = (n: number) => n.toString(16).padStart(32, "a");

/** Seeded records over three hours with shared timestamps (ties broken by uid), joined rules and nulls. */
function dataset(n: number, prefix = "r"): StoredUsageRecord[] {
  let seed = 11;
  const next = (k: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return (seed >> 8) % k;
  };
  const pick = <T>(xs: readonly T[]) => xs[next(xs.length)];
  return Array.from({ length: n }, (_, i) => {
    const outcome = pick<PolicyOutcome>(["allow", "allow", "deny", "modify"]);
    const record: UsageRecord = makeRecord(i, {
      // Whole seconds over 3 hours: many records share a time, so the uid tie-break matters.
      time: new Date(T0 + next(180) * MINUTE + next(3) * 1000).toISOString(),
      token: pick(["alice", "bob", null]),
      upstream_model: pick(["gpt-4o-mini", "claude-3-5-haiku", "Mistral-small", null]),
      endpoint: pick(["chat", "embeddings", "responses", "messages"]),
      outcome,
      rule: pick(RULES[outcome]),
      status: outcome === "deny" ? pick([429, 400]) : pick([200, 200, 200, 502, 504]),
      latency_ms: next(400) / 4,
      stream: next(2) === 1,
      tokens_estimated: next(5) === 0,
      ttft_ms: next(2) === 1 ? next(100) : null,
      cost: next(1_000) / 997,
    });
    const cache = pick([null, null, "hit", "hit_semantic", "miss", "bypass"]);
    const hit = cache === "hit" || cache === "hit_semantic";
    Object.assign(record, {
      cache,
      saved_tokens: hit ? next(900) : 0,
      saved_cost: hit ? next(1_000) / 991 : 0,
    });
    // A few traces of several records each (retried requests), and records without one (telemetry off).
    record.trace_id = i % 3 === 0 ? null : traceId(i % 7);
    // The cost by token class, from `i` (not the seeded sequence, which the rest of the data set is drawn from).
    Object.assign(record, {
      cost_input: (i % 13) / 997,
      cost_cached: i % 3 === 0 ? 0 : (i % 7) / 991,
      cost_cache_write: i % 5 === 0 ? (i % 11) / 983 : 0,
      cost_output: (i % 17) / 977,
      cost_reasoning: i % 2 === 0 ? (i % 19) / 971 : 0,
      cost_web_search: i % 7 === 0 ? (i % 23) / 967 : 0,
    });
    // Mixed case and punctuation: the request log orders uids bytewise in both stores.
    return { ...record, uid: `${prefix}${pick(["", "A", "a", "_", "-"])}:${i.toString(36)}` };
  });
}

/** A report with costs rounded (float sums may differ in the last bits between engines). */
function rounded(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (k, v) => /cost/.test(k) && typeof v === "number" ? v.toFixed(9) : v),
  );
}

/** Every page of the request log for `q`, in order. */
async function allPages(db: UsageDatabase, q: RecordListQuery): Promise<{ uids: string[]; pages: number }> {
  const uids: string[] = [];
  let before: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await db.listRecords({ ...q, before });
    pages++;
    for (const r of page.data) uids.push(`${r.request_id}@${r.time}`);
    if (!page.has_more) {
      assert.equal(page.next_cursor, null);
      return { uids, pages };
    }
    assert.ok(page.next_cursor !== null);
    before = page.next_cursor;
  }
}

/** What the request log should list for `keep`: newest first, ties by uid descending (ASCII: code order is byte order). */
function expectedLog(records: StoredUsageRecord[], keep: (r: StoredUsageRecord) => boolean): string[] {
  const desc = (a: string, b: string) => a < b ? 1 : a > b ? -1 : 0;
  return records.filter(keep)
    .sort((a, b) => desc(a.time, b.time) || desc(a.uid!, b.uid!))
    .map((r) => `${r.request_id}@${r.time}`);
}

const rulesOf = (r: UsageRecord) => r.rule === null ? [] : r.rule.split(",");

Deno.test("console queries: new filters and group keys answer alike on SQLite and PostgreSQL", async () => {
  const records = dataset(700);
  await withStores(records, async ([[, sqlite], [, pg]]) => {
    const keys: UsageGroupKey[] = ["upstream_model", "rule", "endpoint", "minute", "token", "alias"];
    const queries: UsageQuery[] = [
      ...keys.map((k) => ({ group_by: [k] })),
      { upstream_model: "gpt-4o-mini" },
      { upstream_model: "Mistral-small", group_by: ["endpoint", "hour"] },
      { rule: "token.max_tokens" },
      { rule: "alias.content:pii", group_by: ["rule"] },
      { outcome: "deny", group_by: ["rule", "hour"] },
      { outcome: "modify", group_by: ["rule", "token"] },
      { rule: "token.rpm", group_by: ["minute"] },
      { rule: "no.such_rule", group_by: ["rule"] },
      { from: new Date(T0 + 30 * MINUTE).toISOString(), group_by: ["rule", "upstream_model", "minute"] },
    ];
    for (const q of queries) {
      const [want, got] = await Promise.all([sqlite.query(q), pg.query(q)]);
      assert.deepEqual(rounded(got), rounded(want), JSON.stringify(q));
    }

    // And what they say, read from the records in TypeScript.
    const byRule = await sqlite.query({ group_by: ["rule"] });
    const count = (rule: string | null) =>
      records.filter((r) => rule === null ? r.rule === null : rulesOf(r).includes(rule)).length;
    for (const group of byRule.groups) {
      assert.equal(group.requests, count(group.key.rule), group.key.rule ?? "null");
    }
    assert.deepEqual(
      byRule.groups.map((g) => g.key.rule),
      [
        null,
        "alias.content:pii",
        "alias.content:secret",
        "alias.content:ssn",
        "token.budget",
        "token.max_tokens",
        "token.rpm",
      ],
    );
    // The cache's hit rate and savings per token and per alias, as the records say.
    for (const key of ["token", "alias"] as const) {
      for (const group of (await pg.query({ group_by: [key] })).groups) {
        const mine = records.filter((r) => r[key] === group.key[key]);
        const hits = mine.filter((r) => r.cache === "hit" || r.cache === "hit_semantic");
        const want = [
          hits.length,
          hits.length + mine.filter((r) => r.cache === "miss").length,
          hits.reduce((n, r) => n + (r.saved_tokens ?? 0), 0),
          hits.reduce((n, r) => n + (r.saved_cost ?? 0), 0).toFixed(9),
        ];
        const got = [group.cache_hits, group.cache_lookups, group.saved_tokens, group.saved_cost.toFixed(9)];
        assert.deepEqual(got, want, `${key} ${group.key[key]}`);
        assert.ok(group.cache_hits > 0, "every group has hits in this data set");
        // And the cost's classes, summed per group as the cost is.
        for (const field of COST_CLASS_COLUMNS) {
          const sum = mine.reduce((n, r) => n + (r[field] ?? 0), 0);
          assert.equal(group[field].toFixed(9), sum.toFixed(9), `${key} ${group.key[key]} ${field}`);
        }
      }
    }
    // A request modified by two rules is in both groups, so the groups add up to more than the total.
    assert.ok(byRule.groups.reduce((n, g) => n + g.requests, 0) > byRule.totals.requests);
    const maxTokens = await pg.query({ rule: "token.max_tokens" });
    assert.equal(maxTokens.totals.requests, count("token.max_tokens"));
    // "alias.content:pii" must not match inside "alias.content:pii2" or a prefix: only whole rules count.
    assert.equal((await pg.query({ rule: "alias.content" })).totals.requests, 0);
    const byMinute = await pg.query({ group_by: ["minute"] });
    assert.equal(byMinute.groups[0].key.minute, "2025-01-01T00:00:00Z");
    assert.equal(byMinute.groups.reduce((n, g) => n + g.requests, 0), records.length);
    const denied = await pg.query({ outcome: "deny", group_by: ["rule"] });
    for (const g of denied.groups) assert.deepEqual(g.denials, { [g.key.rule!]: g.requests });

    // A rule filter names one rule: a joined one is a 400 on `rule`, in both stores.
    for (const db of [sqlite, pg]) {
      await assert.rejects(
        db.query({ rule: "alias.content:pii,token.max_tokens" }),
        (e) => e instanceof UsageQueryError && e.param === "rule",
      );
    }
  });
});

Deno.test("console queries: the request log lists the same pages on SQLite and PostgreSQL", async () => {
  const records = dataset(450);
  await withStores(records, async ([[, sqlite], [, pg]]) => {
    const cases: [RecordListQuery, (r: StoredUsageRecord) => boolean][] = [
      [{}, () => true],
      [{ limit: 1000 }, () => true],
      [{ limit: 7, token: "alice" }, (r) => r.token === "alice"],
      [{ limit: 25, status: { class: 5 } }, (r) => r.status >= 500 && r.status < 600],
      [{ limit: 25, status: { code: 429 } }, (r) => r.status === 429],
      [
        { limit: 10, outcome: "deny", upstream_model: "gpt-4o-mini" },
        (r) => r.outcome === "deny" && r.upstream_model === "gpt-4o-mini",
      ],
      [{ limit: 9, rule: "alias.content:pii" }, (r) => rulesOf(r).includes("alias.content:pii")],
      [
        {
          limit: 13,
          from: new Date(T0 + 60 * MINUTE).toISOString(),
          to: new Date(T0 + 90 * MINUTE).toISOString(),
        },
        (r) =>
          r.time >= new Date(T0 + 60 * MINUTE).toISOString() &&
          r.time < new Date(T0 + 90 * MINUTE).toISOString(),
      ],
      [{ limit: 4, trace_id: traceId(5) }, (r) => r.trace_id === traceId(5)],
      [{ trace_id: traceId(2), token: "bob" }, (r) => r.trace_id === traceId(2) && r.token === "bob"],
      [{ trace_id: "f".repeat(32) }, () => false],
      [{ status: { code: 404 } }, () => false],
    ];
    for (const [q, keep] of cases) {
      const want = expectedLog(records, keep);
      const [a, b] = await Promise.all([allPages(sqlite, q), allPages(pg, q)]);
      assert.deepEqual(a.uids, want, `sqlite ${JSON.stringify(q)}`);
      assert.deepEqual(b.uids, want, `postgres ${JSON.stringify(q)}`);
      assert.equal(a.pages, Math.max(1, Math.ceil(want.length / (q.limit ?? 100))));
    }
    // The records themselves: every field of the usage record, typed as in the record, never the uid.
    const [first] = (await pg.listRecords({ limit: 1 })).data;
    const [same] = (await sqlite.listRecords({ limit: 1 })).data;
    assert.deepEqual(first, same);
    const stored = records.find((r) => `${r.request_id}@${r.time}` === `${first.request_id}@${first.time}`)!;
    const { uid: _uid, ...record } = stored;
    assert.deepEqual(first, record);
    assert.ok(!("uid" in first));
  });
});

Deno.test("console queries: paging while records arrive shows each record once, with no gaps", async () => {
  const records = dataset(300, "p");
  await withStores(records, async (stores) => {
    for (const [name, db] of stores) {
      const seen: string[] = [];
      let before: string | undefined;
      let round = 0;
      for (;;) {
        const page = await db.listRecords({ limit: 23, before });
        for (const r of page.data) seen.push(`${r.request_id}@${r.time}`);
        if (!page.has_more) break;
        before = page.next_cursor!;
        // Between pages: new requests (newer than everything), and late ones that finished after a long
        // stream, at the very time of the cursor's record and older.
        const cursorTime = decodeCursor(before).time;
        const late = (i: number, time: string) => ({
          ...makeRecord(10_000 + round * 10 + i, { time }),
          uid: `${name}-late-${round}-${i}`,
        });
        await db.insert([
          late(0, new Date(T0 + 10 * 3_600_000 + round).toISOString()),
          late(1, cursorTime),
          late(2, new Date(Date.parse(cursorTime) - 1).toISOString()),
        ]);
        round++;
      }
      assert.ok(round > 10, `${name}: ${round} pages`);
      assert.equal(new Set(seen).size, seen.length, `${name}: a record shown twice`);
      // Every record there before paging began is on some page.
      for (const r of records) {
        assert.ok(seen.includes(`${r.request_id}@${r.time}`), `${name}: ${r.uid} skipped`);
      }
    }
  });
});

Deno.test("console queries: bad request log queries are refused naming the parameter", async () => {
  const sqlite = createSqliteStore(":memory:");
  await sqlite.insert(dataset(5));
  const bad: [RecordListQuery, string][] = [
    [{ limit: 0 }, "limit"],
    [{ limit: 1001 }, "limit"],
    [{ limit: 2.5 }, "limit"],
    [{ before: "not a cursor!" }, "before"],
    [{ before: btoa("{}") }, "before"],
    [{ before: encodeCursor({ time: "x", uid: "y" }).slice(0, -3) + "***" }, "before"],
    [{ from: "soon" }, "from"],
    [{ rule: "a,b" }, "rule"],
    [{ trace_id: traceId(1).toUpperCase() }, "trace_id"],
    [{ trace_id: traceId(1).slice(1) }, "trace_id"],
  ];
  for (const [q, param] of bad) {
    await assert.rejects(
      sqlite.listRecords(q),
      (e) => e instanceof UsageQueryError && e.param === param,
      JSON.stringify(q),
    );
  }
  // A cursor round-trips any text, and one made for a time after everything lists everything.
  assert.deepEqual(decodeCursor(encodeCursor({ time: "2025-01-01T00:00:00.000Z", uid: "é/+=" })), {
    time: "2025-01-01T00:00:00.000Z",
    uid: "é/+=",
  });
  const page = await sqlite.listRecords({
    before: encodeCursor({ time: "9999-01-01T00:00:00.000Z", uid: "" }),
  });
  assert.equal(page.data.length, 5);
  await sqlite.close();
});

Deno.test("console queries: the worker store serves the request log and the rule groups", async () => {
  const dir = await Deno.makeTempDir();
  const db = await openSqliteWorkerStore(`${dir}/usage.sqlite`);
  try {
    const records = dataset(120, "w");
    await db.insert(records);
    const page = await db.listRecords({ limit: 50, rule: "token.max_tokens" });
    assert.deepEqual(
      page.data.map((r) => `${r.request_id}@${r.time}`),
      expectedLog(records, (r) => rulesOf(r).includes("token.max_tokens")).slice(0, 50),
    );
    const inThread = createSqliteStore(":memory:");
    await inThread.insert(records);
    const q: UsageQuery = { group_by: ["rule", "upstream_model"] };
    assert.deepEqual(await db.query(q), await inThread.query(q));
    await inThread.close();
    await assert.rejects(
      db.listRecords({ before: "%%" }),
      (e) => e instanceof UsageQueryError && e.param === "before",
    );
  } finally {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
