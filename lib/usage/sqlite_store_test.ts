import assert from "node:assert/strict";
import { createSqliteStore } from "./sqlite_store.ts";
import { pathsAsWritten } from "../runtime/path_permission.ts";
import { UsageQueryError } from "./query.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import type { PolicyOutcome, UsageGroupKey, UsageRecord } from "./record.ts";

const HOUR = 3_600_000;
const T0 = Date.UTC(2025, 0, 1, 0, 0, 0);
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A small fixed data set covering every filter and group key. */
function dataset(): UsageRecord[] {
  return [
    // alice, prod, chat-default, openai: two allowed in hour 0, one error in hour 1
    makeRecord(1, { time: at(0), latency_ms: 10, prompt_tokens: 100, completion_tokens: 50, cost: 0.5 }),
    makeRecord(2, {
      time: at(10 * 60_000),
      latency_ms: 20,
      prompt_tokens: 10,
      completion_tokens: 5,
      cost: 0.1,
    }),
    makeRecord(3, { time: at(HOUR + 5), latency_ms: 30, status: 502, error_code: "upstream_error", cost: 0 }),
    // bob, dev, chat-fast, anthropic: a denial by rpm and one by content, on day 2
    makeRecord(4, {
      time: at(24 * HOUR),
      token: "bob",
      environment: "dev",
      alias: "chat-fast",
      provider: "anthropic",
      outcome: "deny",
      rule: "token.rpm",
      status: 429,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost: 0,
      latency_ms: 1,
    }),
    makeRecord(5, {
      time: at(24 * HOUR + 1),
      token: "bob",
      environment: "dev",
      alias: "chat-fast",
      provider: "anthropic",
      outcome: "deny",
      rule: "alias.content:pii",
      status: 400,
      prompt_tokens: 0,
      completion_tokens: 0,
      cost: 0,
      latency_ms: 2,
    }),
    // bob, modified, allowed
    makeRecord(6, {
      time: at(24 * HOUR + 2),
      token: "bob",
      environment: "dev",
      alias: "chat-fast",
      provider: "anthropic",
      outcome: "modify",
      rule: "alias.content:redact",
      latency_ms: 40,
      stream: true,
      ttft_ms: 12,
      tokens_estimated: true,
    }),
    // unauthenticated request: null token/environment/alias/provider
    makeRecord(7, {
      time: at(25 * HOUR),
      token: null,
      environment: null,
      alias: null,
      provider: null,
      upstream_model: null,
      status: 401,
      error_code: "invalid_api_key",
      prompt_tokens: 0,
      completion_tokens: 0,
      cost: 0,
      latency_ms: 3,
    }),
  ];
}

async function seeded() {
  const store = createSqliteStore(":memory:");
  await store.insert(dataset());
  return store;
}

Deno.test("sqlite store: insert and query round trip totals", async () => {
  const store = await seeded();
  const { totals, groups } = await store.query({});
  assert.deepEqual(groups, []);
  assert.equal(totals.requests, 7);
  assert.equal(totals.prompt_tokens, 100 + 10 + 10 + 10);
  assert.equal(totals.completion_tokens, 50 + 5 + 5 + 5);
  assert.equal(totals.total_tokens, totals.prompt_tokens + totals.completion_tokens);
  assert.ok(Math.abs(totals.cost - (0.5 + 0.1 + 0.001)) < 1e-9);
  assert.deepEqual(totals.denials, { "token.rpm": 1, "alias.content:pii": 1 });
  // 502 and 401 are errors; the 429 and 400 denials are not
  assert.equal(totals.errors, 2);
  await store.close();
});

Deno.test("sqlite store: every filter", async () => {
  const store = await seeded();
  const count = async (q: Parameters<typeof store.query>[0]) => (await store.query(q)).totals.requests;
  assert.equal(await count({ token: "alice" }), 3);
  assert.equal(await count({ token: "bob" }), 3);
  assert.equal(await count({ environment: "dev" }), 3);
  assert.equal(await count({ alias: "chat-default" }), 3);
  assert.equal(await count({ provider: "anthropic" }), 3);
  assert.equal(await count({ outcome: "deny" }), 2);
  assert.equal(await count({ outcome: "modify" }), 1);
  assert.equal(await count({ from: at(HOUR) }), 5);
  assert.equal(await count({ to: at(HOUR) }), 2, "to is exclusive");
  assert.equal(await count({ from: at(HOUR), to: at(24 * HOUR) }), 1);
  assert.equal(await count({ from: "2025-01-02" }), 4, "date-only times are accepted");
  assert.equal(
    await count({ from: "2025-01-01T01:00:00+01:00", to: "2025-01-01T00:30:00Z" }),
    2,
    "offsets normalized",
  );
  assert.equal(await count({ token: "bob", outcome: "deny", environment: "dev" }), 2);
  assert.equal(await count({ token: "nobody" }), 0);
  // a value that would break concatenated SQL is just a value
  assert.equal(await count({ token: "x' OR '1'='1" }), 0);
  await store.close();
});

Deno.test("sqlite store: group by each key", async () => {
  const store = await seeded();
  const keysOf = async (group: "token" | "environment" | "alias" | "provider" | "outcome") =>
    Object.fromEntries(
      (await store.query({ group_by: [group] })).groups.map((g) => [String(g.key[group]), g.requests]),
    );
  assert.deepEqual(await keysOf("token"), { null: 1, alice: 3, bob: 3 });
  assert.deepEqual(await keysOf("environment"), { null: 1, prod: 3, dev: 3 });
  assert.deepEqual(await keysOf("alias"), { null: 1, "chat-default": 3, "chat-fast": 3 });
  assert.deepEqual(await keysOf("provider"), { null: 1, openai: 3, anthropic: 3 });
  assert.deepEqual(await keysOf("outcome"), { allow: 4, deny: 2, modify: 1 });

  const byToken = (await store.query({ group_by: ["token"] })).groups;
  assert.equal(byToken[0].key.token, null, "null keys are kept as null");
  const bob = byToken.find((g) => g.key.token === "bob")!;
  assert.deepEqual(bob.denials, { "token.rpm": 1, "alias.content:pii": 1 });
  assert.equal(bob.errors, 0);
  const alice = byToken.find((g) => g.key.token === "alice")!;
  assert.deepEqual(alice.denials, {});
  assert.equal(alice.errors, 1);
  assert.equal(alice.total_tokens, 150 + 15 + 15);
  assert.deepEqual(alice.latency_ms, { p50: 20, p90: 30, p99: 30 });
  await store.close();
});

Deno.test("sqlite store: cache outcomes and what hits saved round-trip, and sum per token and per alias", async () => {
  const store = createSqliteStore(":memory:");
  // A hit spends nothing upstream: what it saved is what the first answer cost.
  const hit = { prompt_tokens: 0, completion_tokens: 0, cost: 0 };
  const { cache: _c, saved_tokens: _t, saved_cost: _s, ...uncached } = makeRecord(9, { token: "carol" });
  await store.insert([
    makeRecord(1, { ...hit, cache: "hit", saved_tokens: 150, saved_cost: 0.5 }),
    makeRecord(2, { ...hit, cache: "hit_semantic", saved_tokens: 15, saved_cost: 0.1 }),
    makeRecord(3, { cache: "miss" }),
    makeRecord(4, { cache: "bypass" }),
    makeRecord(5, { token: "bob", alias: "chat-fast", cache: "miss" }),
    makeRecord(6, { token: "bob", alias: "chat-fast", cache: "miss" }),
    makeRecord(7, { token: "bob", alias: "chat-fast", cache: null }),
    // Written without the fields at all (as before caching): no cache, nothing saved.
    uncached,
  ]);
  const cacheOf = (
    t: { cache_hits: number; cache_lookups: number; saved_tokens: number; saved_cost: number },
  ) => [t.cache_hits, t.cache_lookups, t.saved_tokens, Number(t.saved_cost.toFixed(9))];
  const by = async (key: "token" | "alias") =>
    Object.fromEntries(
      (await store.query({ group_by: [key] })).groups.map((g) => [String(g.key[key]), cacheOf(g)]),
    );
  assert.deepEqual(await by("token"), { alice: [2, 3, 165, 0.6], bob: [0, 2, 0, 0], carol: [0, 0, 0, 0] });
  assert.deepEqual(await by("alias"), { "chat-default": [2, 3, 165, 0.6], "chat-fast": [0, 2, 0, 0] });
  assert.deepEqual(cacheOf((await store.query({})).totals), [2, 5, 165, 0.6]);
  assert.deepEqual(cacheOf((await store.query({ token: "nobody" })).totals), [0, 0, 0, 0]);
  // The request log gives each record's fields back as written; the one written without them has defaults.
  const log = new Map((await store.listRecords({})).data.map((r) => [r.request_id, r]));
  assert.deepEqual(
    [log.get("req_1"), log.get("req_4"), log.get("req_9")].map((
      r,
    ) => [r?.cache, r?.saved_tokens, r?.saved_cost]),
    [["hit", 150, 0.5], ["bypass", 0, 0], [null, 0, 0]],
  );
  await store.close();
});

Deno.test("sqlite store: trace ids round-trip, and the request log finds a trace's record", async () => {
  const store = createSqliteStore(":memory:");
  const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const { trace_id: _t, ...untraced } = makeRecord(3);
  await store.insert([
    makeRecord(1, { trace_id: trace }),
    makeRecord(2, { trace_id: "0".repeat(32) }),
    untraced,
  ]);
  const log = (await store.listRecords({})).data;
  assert.deepEqual(log.map((r) => [r.request_id, r.trace_id]), [
    ["req_3", null],
    ["req_2", "0".repeat(32)],
    ["req_1", trace],
  ]);
  assert.deepEqual(log[2], makeRecord(1, { trace_id: trace }));
  const found = await store.listRecords({ trace_id: trace });
  assert.deepEqual([found.data.map((r) => r.request_id), found.has_more], [["req_1"], false]);
  assert.deepEqual((await store.listRecords({ trace_id: "f".repeat(32) })).data, []);
  for (const bad of ["4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f", `${trace}' OR '1'='1`]) {
    await assert.rejects(
      () => store.listRecords({ trace_id: bad }),
      (e: unknown) => e instanceof UsageQueryError && e.param === "trace_id",
    );
  }
  await store.close();
});

Deno.test("sqlite store: group by hour and day, and by several keys", async () => {
  const store = await seeded();
  const hours = (await store.query({ group_by: ["hour"] })).groups.map((g) => [g.key.hour, g.requests]);
  assert.deepEqual(hours, [
    ["2025-01-01T00:00:00Z", 2],
    ["2025-01-01T01:00:00Z", 1],
    ["2025-01-02T00:00:00Z", 3],
    ["2025-01-02T01:00:00Z", 1],
  ]);
  const days = (await store.query({ group_by: ["day"] })).groups.map((g) => [g.key.day, g.requests]);
  assert.deepEqual(days, [["2025-01-01", 3], ["2025-01-02", 4]]);

  const multi = await store.query({ group_by: ["day", "outcome", "day"], token: "bob" });
  assert.deepEqual(multi.groups.map((g) => g.key), [
    { day: "2025-01-02", outcome: "deny" },
    { day: "2025-01-02", outcome: "modify" },
  ]);
  assert.deepEqual(multi.groups[0].denials, { "token.rpm": 1, "alias.content:pii": 1 });
  assert.equal(multi.totals.requests, 3);
  await store.close();
});

Deno.test("sqlite store: rejects unknown group keys and bad times", async () => {
  const store = await seeded();
  await assert.rejects(
    () => store.query({ group_by: ["token; DROP TABLE usage" as unknown as UsageGroupKey] }),
    (e: unknown) => e instanceof UsageQueryError && e.param === "group_by",
  );
  await assert.rejects(() => store.query({ from: "yesterday" }), UsageQueryError);
  await assert.rejects(() => store.query({ outcome: "maybe" as unknown as PolicyOutcome }), UsageQueryError);
  assert.equal((await store.query({})).totals.requests, 7);
  await store.close();
});

Deno.test("sqlite store: nearest-rank latency percentiles on a known distribution", async () => {
  const store = createSqliteStore(":memory:");
  // latencies 1..100 in shuffled order: nearest rank gives p50 = 50, p90 = 90, p99 = 99
  const latencies = Array.from({ length: 100 }, (_, i) => i + 1).sort((a, b) =>
    ((a * 37) % 101) - ((b * 37) % 101)
  );
  await store.insert(
    latencies.map((ms, i) => makeRecord(i, { latency_ms: ms, token: i % 2 ? "odd" : "even" })),
  );
  const { totals, groups } = await store.query({ group_by: ["token"] });
  assert.deepEqual(totals.latency_ms, { p50: 50, p90: 90, p99: 99 });
  // each group is 50 values; nearest rank: ceil(0.5·50) = 25th, ceil(0.9·50) = 45th, ceil(0.99·50) = 50th
  const even = groups.find((g) => g.key.token === "even")!; // latencies at even indices
  const evens = latencies.filter((_, i) => i % 2 === 0).sort((a, b) => a - b);
  assert.deepEqual(even.latency_ms, { p50: evens[24], p90: evens[44], p99: evens[49] });
  // a single value is every percentile; no values gives nulls
  assert.deepEqual((await store.query({ token: "even", from: at(0), to: at(1) })).totals.latency_ms, {
    p50: latencies[0],
    p90: latencies[0],
    p99: latencies[0],
  });
  assert.deepEqual((await store.query({ token: "none" })).totals.latency_ms, {
    p50: null,
    p90: null,
    p99: null,
  });
  await store.close();
});

Deno.test("sqlite store: retention deletes only older rows", async () => {
  const store = await seeded();
  const deleted = await store.deleteOlderThan(at(24 * HOUR), 100);
  assert.equal(deleted, 3);
  const { totals } = await store.query({});
  assert.equal(totals.requests, 4);
  assert.equal((await store.query({ to: at(24 * HOUR) })).totals.requests, 0);
  assert.equal(await store.deleteOlderThan(at(0), 100), 0);
  await store.close();
});

Deno.test("sqlite store: sumSince sums a token's tokens and cost from a time, by the token's identity", async () => {
  const store = await seeded();
  // A token issued later under the name alice is another identity: its usage is not alice's, nor alice's its.
  await store.insert([makeRecord(8, { time: at(HOUR), token_id: "tok_other", prompt_tokens: 1000 })]);
  assert.deepEqual(await store.sumSince("cfg_alice", at(0)), { tokens: 150 + 15 + 15, cost: 0.6 });
  assert.deepEqual(await store.sumSince("cfg_alice", at(HOUR)), { tokens: 15, cost: 0 });
  assert.deepEqual(await store.sumSince("cfg_bob", at(0)), { tokens: 15, cost: 0.001 });
  assert.deepEqual(await store.sumSince("tok_other", at(0)), { tokens: 1005, cost: 0.001 });
  assert.deepEqual(await store.sumSince("alice", at(0)), { tokens: 0, cost: 0 }, "a name is not an identity");
  assert.deepEqual(await store.sumSince("nobody", at(0)), { tokens: 0, cost: 0 });
  await store.close();
});

Deno.test("sqlite store: sumTeamSince sums what was recorded under a team's identity from a time, whoever the token", async () => {
  const store = createSqliteStore(":memory:");
  const payments = { team: "payments", team_id: "team_payments" };
  await store.insert([
    makeRecord(1, {
      time: at(0),
      token_id: "tok_gone",
      ...payments,
      prompt_tokens: 100,
      completion_tokens: 0,
    }),
    makeRecord(2, {
      time: at(HOUR),
      token_id: "cfg_bob",
      ...payments,
      prompt_tokens: 7,
      completion_tokens: 3,
    }),
    makeRecord(3, {
      time: at(HOUR),
      token_id: "cfg_bob",
      team: "growth",
      team_id: "team_growth",
      prompt_tokens: 50,
      completion_tokens: 0,
    }),
    makeRecord(4, {
      time: at(HOUR),
      token_id: "cfg_bob",
      team: null,
      prompt_tokens: 60,
      completion_tokens: 0,
    }),
    // A team made through the admin API under the same name (deleted since): its own identity, not its spend.
    makeRecord(5, {
      time: at(HOUR),
      token_id: "tok_gone",
      team: "payments",
      team_id: "tm_000000000000000000000001",
      prompt_tokens: 1000,
      completion_tokens: 0,
    }),
  ]);
  assert.deepEqual((await store.sumTeamSince("team_payments", at(0))).tokens, 110);
  assert.deepEqual((await store.sumTeamSince("team_payments", at(HOUR))).tokens, 10);
  assert.deepEqual((await store.sumTeamSince("tm_000000000000000000000001", at(0))).tokens, 1000);
  assert.deepEqual(
    await store.sumTeamSince("payments", at(0)),
    { tokens: 0, cost: 0 },
    "a name is not an identity",
  );
  assert.deepEqual(await store.sumTeamSince("nobody", at(0)), { tokens: 0, cost: 0 });
  await store.close();
});

Deno.test({
  name: "sqlite store: a SQLite URI's directories are made, as for a path",
  // Where the runtime reads URIs: Deno with every permission (`deno test -A`), not `deno task test`'s.
  ignore: !pathsAsWritten(),
  fn: async () => {
    // They were not for a `file:` name: the open failed on a directory the location check said would be made.
    const dir = await Deno.makeTempDir();
    try {
      const store = createSqliteStore(`file:${dir}/a/b/usage.sqlite?mode=rwc`);
      await store.insert([makeRecord(1)]);
      await store.close();
      assert.ok((await Deno.stat(`${dir}/a/b/usage.sqlite`)).isFile);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
