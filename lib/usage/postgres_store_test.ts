/**
 * The PostgreSQL usage store against the shared test database (a private schema per test, dropped after):
 * its `/admin/usage` answers are compared with the SQLite store's on the same records, inserts are idempotent
 * by uid, migrations are safe when several replicas start at once and refuse a newer schema, and an
 * unreachable database fails fast (the pipeline then queues and spills) with stored responses answering 503.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../errors.ts";
import { dropSchema, queryOnce, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { backstop, BackstopError } from "../../tests/helpers/backstop.ts";
import { POSTGRES_SCHEMA_VERSION, PostgresPool } from "./postgres_schema.ts";
import { createPostgresStore, openPostgresStore } from "./postgres_store.ts";
import { UsageQueryError } from "./query.ts";
import {
  COST_CLASS_COLUMNS,
  type PolicyOutcome,
  type UsageGroupKey,
  type UsageQuery,
  type UsageRecord,
} from "./record.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import type { StoredUsageRecord, UsageDatabase } from "./store.ts";

const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);
const HOUR = 3_600_000;

/** Runs `fn` with a PostgreSQL store in a fresh schema, dropped afterwards. */
async function withStore(fn: (db: UsageDatabase, schema: string) => Promise<void>): Promise<void> {
  const schema = randomSchema("usage");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  try {
    await fn(db, schema);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
}

/** A seeded pseudo-random data set that exercises every filter, group key, null and percentile tie. */
function dataset(n: number): StoredUsageRecord[] {
  let seed = 7;
  const next = (k: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
    return seed % k;
  };
  const pick = <T>(xs: readonly T[]) => xs[next(xs.length)];
  const outcomes: PolicyOutcome[] = ["allow", "allow", "deny", "modify"];
  return Array.from({ length: n }, (_, i) => {
    const outcome = pick(outcomes);
    const record: UsageRecord = makeRecord(i, {
      time: new Date(T0 + next(72) * HOUR + next(3_600_000)).toISOString(),
      token: pick(["alice", "bob", "Zed", "_ops", null]),
      environment: pick(["prod", "dev", null]),
      alias: pick(["chat-default", "chat-fast", "Embed", null]),
      provider: pick(["openai", "anthropic", "b-local", null]),
      outcome,
      rule: outcome === "allow" ? null : pick(["token.rpm", "alias.content:pii", null]),
      status: outcome === "deny" ? pick([429, 400]) : pick([200, 200, 502]),
      prompt_tokens: next(1_000),
      completion_tokens: next(500),
      cost: next(1_000) / 997,
      latency_ms: next(50) * 2.5,
      stream: next(2) === 1,
      ttft_ms: next(2) === 1 ? next(100) : null,
    });
    // The cache columns (migration 6): sums per group must agree too, and records without a cache stay null.
    const cache = pick([null, "hit", "hit_semantic", "miss", "bypass"]);
    const hit = cache === "hit" || cache === "hit_semantic";
    Object.assign(record, {
      cache,
      saved_tokens: hit ? next(2_000) : 0,
      saved_cost: hit ? next(1_000) / 991 : 0,
      // The trace column (migration 8): only the request log reads it, but it must not disturb the sums.
      trace_id: i % 4 === 0 ? null : (i % 5).toString(16).padStart(32, "0"),
      // The cost classes (migration 9): summed per group like the cost, so both stores must agree on them.
      cost_input: next(1_000) / 983,
      cost_cached: next(3) === 0 ? 0 : next(1_000) / 977,
      cost_cache_write: next(4) === 0 ? next(1_000) / 971 : 0,
      cost_output: next(1_000) / 967,
      cost_reasoning: next(2) === 0 ? next(1_000) / 953 : 0,
      // Web searches (migration 15): a class of the cost like the others.
      cost_web_search: next(5) === 0 ? next(1_000) / 947 : 0,
    });
    return { ...record, uid: `u${i}` };
  });
}

Deno.test("postgres usage: /admin/usage answers equal SQLite's on the same records", async () => {
  const records = dataset(600);
  const sqlite = createSqliteStore(":memory:");
  await sqlite.insert(records);
  await withStore(async (pg) => {
    await pg.insert(records);
    const keys: UsageGroupKey[] = [
      "token",
      "token_id",
      "environment",
      "alias",
      "provider",
      "outcome",
      "hour",
      "day",
    ];
    const queries: UsageQuery[] = [
      {},
      { from: new Date(T0 + 5 * HOUR).toISOString(), to: new Date(T0 + 30 * HOUR).toISOString() },
      { token: "alice" },
      { outcome: "deny", group_by: ["token", "outcome"] },
      { provider: "openai", environment: "prod", group_by: ["alias", "day"] },
      { token: "nobody", group_by: ["token"] },
      ...keys.map((k) => ({ group_by: [k] })),
      { group_by: ["token", "alias", "hour"] },
      { outcome: "deny", group_by: ["token_id", "hour"] },
      { from: "2025-01-02T00:00:00+02:00", group_by: ["day", "provider"] },
    ];
    for (const q of queries) {
      const [want, got] = await Promise.all([sqlite.query(q), pg.query(q)]);
      // Sums of float costs may differ in the last bits between engines' summation orders.
      const round = (r: typeof want) =>
        JSON.parse(
          JSON.stringify(r, (k, v) => /cost/.test(k) && typeof v === "number" ? v.toFixed(9) : v),
        );
      assert.deepEqual(round(got), round(want), JSON.stringify(q));
    }
    assert.equal((await pg.query({})).totals.requests, 600);
    // The cache sums are really there (not all zero), and read from the records in TypeScript.
    const totals = (await pg.query({})).totals;
    const hits = records.filter((r) => r.cache === "hit" || r.cache === "hit_semantic");
    assert.ok(hits.length > 0);
    assert.equal(totals.cache_hits, hits.length);
    assert.equal(totals.cache_lookups, hits.length + records.filter((r) => r.cache === "miss").length);
    assert.equal(totals.saved_tokens, hits.reduce((n, r) => n + (r.saved_tokens ?? 0), 0));
    // So are the cost classes' sums, each what the records add up to.
    for (const field of COST_CLASS_COLUMNS) {
      const want = records.reduce((n, r) => n + (r[field] ?? 0), 0);
      assert.ok(want > 0, field);
      assert.equal(totals[field].toFixed(9), want.toFixed(9), field);
    }
    // The same refusals as SQLite, as UsageQueryError naming the parameter (the admin API's 400).
    for (
      const [q, param] of [
        [{ group_by: ["weekday"] }, "group_by"],
        [{ from: "yesterday" }, "from"],
        [{ outcome: "maybe" }, "outcome"],
      ] as const
    ) {
      await assert.rejects(
        sqlite.query(q as UsageQuery),
        (e) => e instanceof UsageQueryError && e.param === param,
      );
      await assert.rejects(
        pg.query(q as UsageQuery),
        (e) => e instanceof UsageQueryError && e.param === param,
      );
    }
  });
  await sqlite.close();
});

Deno.test("postgres usage: trace ids round-trip, and the request log finds a trace's record", async () => {
  await withStore(async (pg) => {
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const { trace_id: _t, ...untraced } = makeRecord(3);
    await pg.insert([
      { ...makeRecord(1, { trace_id: trace }), uid: "t1" },
      { ...makeRecord(2, { trace_id: "0".repeat(32) }), uid: "t2" },
      { ...untraced, uid: "t3" },
    ]);
    const log = (await pg.listRecords({})).data;
    assert.deepEqual(log.map((r) => [r.request_id, r.trace_id]), [
      ["req_3", null],
      ["req_2", "0".repeat(32)],
      ["req_1", trace],
    ]);
    assert.deepEqual(log[2], makeRecord(1, { trace_id: trace }));
    const found = await pg.listRecords({ trace_id: trace });
    assert.deepEqual([found.data.map((r) => r.request_id), found.has_more], [["req_1"], false]);
    assert.deepEqual((await pg.listRecords({ trace_id: "f".repeat(32) })).data, []);
    await assert.rejects(
      pg.listRecords({ trace_id: trace.toUpperCase() }),
      (e) => e instanceof UsageQueryError && e.param === "trace_id",
    );
  });
});

Deno.test("postgres usage: a replayed or retried batch never stores a record twice", async () => {
  await withStore(async (pg, schema) => {
    const records = dataset(2_500); // more than one INSERT statement's worth
    await pg.insert(records.slice(0, 1_200));
    await pg.insert(records); // a retry of a batch that had half committed
    await pg.insert(records.slice(100, 200)); // a spill file replayed again
    await pg.insert([]);
    const [row] = await queryOnce(`SELECT COUNT(*) AS n, COUNT(DISTINCT uid) AS u FROM "${schema}".usage`);
    assert.equal(Number(row.n), 2_500);
    assert.equal(Number(row.u), 2_500);
    assert.equal((await pg.query({})).totals.requests, 2_500);
  });
});

Deno.test("postgres usage: budgets are seeded from sums, retention deletes old records", async () => {
  await withStore(async (pg) => {
    const records = [0, 1, 2, 3].map((i) => ({
      ...makeRecord(i, {
        time: new Date(T0 + i * HOUR).toISOString(),
        prompt_tokens: 10,
        completion_tokens: 5,
      }),
      cost: 0.25,
      uid: `r${i}`,
    }));
    records.push({ ...records[0], uid: "other", token: "bob", token_id: "cfg_bob" });
    const payments = { team: "payments", team_id: "tm_payments" };
    records.push({ ...records[1], uid: "t1", token: "gone", token_id: "tok_gone", ...payments });
    records.push({ ...records[2], uid: "t2", token: "bob", token_id: "cfg_bob", ...payments });
    // A team of the same name before it (deleted since): not its spend.
    records.push({
      ...records[3],
      uid: "t3",
      token: "bob",
      token_id: "cfg_bob",
      team: "payments",
      team_id: "tm_gone",
    });
    await pg.insert(records);
    assert.deepEqual(await pg.sumTeamSince("tm_payments", new Date(T0 + HOUR).toISOString()), {
      tokens: 30,
      cost: 0.5,
    });
    assert.deepEqual(await pg.sumTeamSince("tm_payments", new Date(T0 + 2 * HOUR).toISOString()), {
      tokens: 15,
      cost: 0.25,
    });
    assert.deepEqual(await pg.sumTeamSince("payments", new Date(T0).toISOString()), { tokens: 0, cost: 0 });
    assert.deepEqual(await pg.sumSince("cfg_alice", new Date(T0 + HOUR).toISOString()), {
      tokens: 45,
      cost: 0.75,
    });
    assert.deepEqual(await pg.sumSince("nobody", new Date(T0).toISOString()), { tokens: 0, cost: 0 });
    // At most the batch per statement: retention calls again until a batch comes back short.
    assert.equal(await pg.deleteOlderThan(new Date(T0 + 2 * HOUR).toISOString(), 3), 3);
    assert.equal((await pg.query({})).totals.requests, 5);
    assert.equal(await pg.deleteOlderThan(new Date(T0 + 2 * HOUR).toISOString(), 3), 1);
    assert.equal((await pg.query({})).totals.requests, 4);
    await assert.rejects(pg.deleteOlderThan("not a time", 3), UsageQueryError);
  });
});

Deno.test("postgres usage: replicas migrating at once end with one schema; a newer one is refused", async () => {
  const schema = randomSchema("migrate");
  try {
    const stores = await Promise.all(
      Array.from({ length: 5 }, () => openPostgresStore({ url: TEST_DATABASE_URL, schema })),
    );
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    assert.equal(POSTGRES_SCHEMA_VERSION, 16);
    // Every replica writes to and reads from the same tables.
    await Promise.all(stores.map((s, i) => s.insert([{ ...makeRecord(i), uid: `m${i}` }])));
    for (const s of stores) assert.equal((await s.query({})).totals.requests, 5);
    await Promise.all(stores.map((s) => s.close()));

    await queryOnce(`INSERT INTO "${schema}".schema_versions (version) VALUES (99)`);
    await assert.rejects(
      openPostgresStore({ url: TEST_DATABASE_URL, schema }),
      /schema version 99 is newer than this gateway's \(16\)/,
    );
  } finally {
    await dropSchema(schema);
  }
});

Deno.test("postgres usage: a closed store rejects; an unreachable database fails fast with 503 for responses", async () => {
  await withStore(async (pg) => {
    await pg.close();
    await assert.rejects(pg.insert([{ ...makeRecord(1), uid: "x" }]), /closed/);
  });
  // Nothing listens on this port: connecting is refused at once. The time limit is ten minutes, so a call that
  // fails within the backstop failed because the database is away, not because it waited out the limit.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const url = `postgres://postgres@127.0.0.1:${port}/test`;
  const LIMIT_MS = 600_000;
  const away = (e: unknown) => !(e instanceof BackstopError);
  await assert.rejects(
    backstop(openPostgresStore({ url, schema: "gone", timeoutMs: LIMIT_MS }), "open"),
    away,
  );
  // A store whose database goes away after start: its calls fail at once.
  const db = createPostgresStore(new PostgresPool({ url, schema: "gone", timeoutMs: LIMIT_MS }), LIMIT_MS);
  await assert.rejects(backstop(db.insert([{ ...makeRecord(1), uid: "y" }]), "insert"), away);
  await assert.rejects(
    backstop(db.query({}), "query"),
    (e) => e instanceof GatewayError && e.code === "usage_store_unavailable",
  );
  await assert.rejects(
    backstop(db.query({ group_by: ["week" as UsageGroupKey] }), "bad query"),
    UsageQueryError,
  );
  await assert.rejects(backstop(db.responses.get("resp_1", "alice"), "stored response"), (e) => {
    assert.ok(e instanceof GatewayError);
    assert.equal(e.status, 503);
    assert.equal(e.code, "store_unavailable");
    return true;
  });
  await db.close();
});

Deno.test("postgres usage: statements the server rejects keep the pool, and never end the process", async () => {
  await withStore(async (db) => {
    await db.insert([{ ...makeRecord(1, { token: "ok" }), uid: "nul-1" }]);
    // PostgreSQL text cannot hold NUL: the server refuses each of these statements (22021). Before, every
    // refusal replaced the pool, and postgres.js then rejected one of its own queries that nobody awaited,
    // which ended the process a few refusals later.
    for (let i = 0; i < 12; i++) await assert.rejects(db.query({ token: `bad\u0000${i}` }));
    // Each call's rejection handled at once (awaiting them one by one would leave the later ones unhandled).
    await Promise.all(
      Array.from({ length: 6 }, (_, i) => assert.rejects(db.query({ token: `bad\u0000p${i}` }))),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const report = await db.query({ token: "ok" });
    assert.equal(report.totals.requests, 1);
  });
});

Deno.test("postgres usage: resetting the pool while its connections start never ends the process", async () => {
  const pool = new PostgresPool({ url: TEST_DATABASE_URL, schema: "public", poolSize: 4, timeoutMs: 2_000 });
  try {
    // A reset ends the old pool's connections at once, some of them mid-start. With postgres.js fetching the
    // array types of each new connection (its default), such a cut rejected a promise nobody awaited, and the
    // process ended within a few rounds.
    for (let round = 0; round < 40; round++) {
      const calls = Array.from({ length: 4 }, () => pool.sql.unsafe("SELECT 1 AS x").catch(() => null));
      await new Promise((resolve) => setTimeout(resolve, round % 7));
      pool.reset();
      await Promise.all(calls);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Every connection the loop cut mid-start still sits in the server's accept queue (up to 160 of them),
    // and the server starts a backend for each in turn; on a busy machine that takes longer than the pool's
    // 2 s connect timeout, so the next connection would wait behind them and fail with CONNECT_TIMEOUT,
    // rejecting the awaited query below (no escaped rejection). An independent connection, with postgres.js's
    // default 30 s limit, waits out that queue; then the reset pool must still connect within its own limit.
    await queryOnce("SELECT 1");
    const [row] = await pool.sql.unsafe("SELECT 2 AS x");
    assert.equal(Number(row.x), 2);
  } finally {
    await pool.end(1);
  }
});
