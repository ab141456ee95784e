/**
 * A usage record's `team` and `team_id` (the name and identity of the request's token's team at the time) in
 * the SQLite store (on the request thread and in its worker) and the PostgreSQL store: written and read back
 * (null when none or absent), found by `team=` (every team of the name) and `team_id=` (one team) in the request
 * log and `/admin/usage`, grouped by `group_by=team` and `team_id`, summed by identity for a team's budget, and
 * kept in a JSONL line. The PostgreSQL case runs in CI always; off CI it skips only when the database is
 * unreachable.
 */
import assert from "node:assert/strict";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { UsageQueryError } from "./query.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { entryLine, type UsageDatabase } from "./store.ts";

async function assertTeams(db: UsageDatabase): Promise<void> {
  const { team: _t, ...teamless } = makeRecord(4);
  const { team_id: _i, ...idless } = makeRecord(6, { team: "platform", cost: 0.125 });
  await db.insert([
    { ...makeRecord(1, { team: "platform", team_id: "tm_aaa", cost: 0.5 }), uid: "u1" },
    { ...makeRecord(2, { team: "research", team_id: "team_research", token: "bob", cost: 0.25 }), uid: "u2" },
    { ...makeRecord(3, { team: null }), uid: "u3" },
    { ...teamless, uid: "u4" },
    // A team of the same name made after the first was deleted: its own id.
    { ...makeRecord(5, { team: "platform", team_id: "tm_bbb", cost: 0.5 }), uid: "u5" },
    // A record whose writer knew no identity (a spill line of an earlier version).
    { ...idless, uid: "u6" },
  ]);
  const log = (await db.listRecords({})).data;
  assert.deepEqual(log.map((r) => [r.request_id, r.team, r.team_id]), [
    ["req_6", "platform", null],
    ["req_5", "platform", "tm_bbb"],
    ["req_4", null, null],
    ["req_3", null, null],
    ["req_2", "research", "team_research"],
    ["req_1", "platform", "tm_aaa"],
  ]);
  // By id, one team's records alone (and its budget's seed); by name, every team that had it.
  assert.deepEqual((await db.listRecords({ team_id: "tm_aaa" })).data.map((r) => r.request_id), ["req_1"]);
  assert.equal((await db.query({ team_id: "tm_bbb" })).totals.cost, 0.5);
  assert.deepEqual(await db.sumTeamSince("tm_bbb", "2025-01-01T00:00:00.000Z"), { tokens: 15, cost: 0.5 });
  assert.deepEqual(await db.sumTeamSince("team_research", "2025-01-01T00:00:00.000Z"), {
    tokens: 15,
    cost: 0.25,
  });
  assert.deepEqual(await db.sumTeamSince("platform", "2025-01-01T00:00:00.000Z"), { tokens: 0, cost: 0 });
  // Each identity's group also says the name its records carry (`team`), as a token's group does; the record
  // whose writer knew no identity is the group of none, and names none.
  const byId = await db.query({ team: "platform", group_by: ["team_id"] });
  assert.deepEqual(byId.groups.map((g) => [g.key, g.requests, g.cost]), [
    [{ team_id: null, team: null }, 1, 0.125],
    [{ team_id: "tm_aaa", team: "platform" }, 1, 0.5],
    [{ team_id: "tm_bbb", team: "platform" }, 1, 0.5],
  ]);
  const everyId = await db.query({ group_by: ["team_id", "day"] });
  assert.deepEqual(everyId.groups.map((g) => [g.key, g.requests]), [
    [{ team_id: null, day: "2025-01-01", team: null }, 3],
    [{ team_id: "team_research", day: "2025-01-01", team: "research" }, 1],
    [{ team_id: "tm_aaa", day: "2025-01-01", team: "platform" }, 1],
    [{ team_id: "tm_bbb", day: "2025-01-01", team: "platform" }, 1],
  ]);
  // Asked for as a key too, the name is that key's, once.
  const both = await db.query({ team_id: "team_research", group_by: ["team", "team_id"] });
  assert.deepEqual(both.groups.map((g) => g.key), [{ team: "research", team_id: "team_research" }]);
  await assert.rejects(
    db.query({ team_id: 7 as unknown as string }),
    (e) => e instanceof UsageQueryError && e.param === "team_id",
  );
  const platform = (await db.listRecords({ team: "platform" })).data;
  assert.deepEqual(platform.map((r) => r.request_id), ["req_6", "req_5", "req_1"]);
  assert.deepEqual((await db.listRecords({ team: "nobody" })).data, []);

  const report = await db.query({ group_by: ["team"] });
  assert.deepEqual(report.groups.map((g) => [g.key.team, g.requests, g.cost]), [
    [null, 2, 0.002],
    ["platform", 3, 1.125],
    ["research", 1, 0.25],
  ]);
  const filtered = await db.query({ team: "research", group_by: ["team", "token"] });
  assert.equal(filtered.totals.requests, 1);
  assert.deepEqual(filtered.groups.map((g) => g.key), [{ team: "research", token: "bob" }]);
  await assert.rejects(
    db.query({ team: 7 as unknown as string }),
    (e) => e instanceof UsageQueryError && e.param === "team",
  );
}

Deno.test("usage team: round-trips, filters and groups in the SQLite store, on the request thread and in the worker", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "usage-team-" });
    const db = await open(`${dir}/usage.sqlite`);
    try {
      await assertTeams(db);
    } finally {
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("usage team: round-trips, filters and groups in the PostgreSQL store", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("usageteam");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  try {
    await assertTeams(db);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
});

Deno.test("usage team: a JSONL or spill line keeps it", () => {
  const line = entryLine({ record: makeRecord(1, { team: "platform", team_id: "tm_aaa" }), uid: "u1" });
  assert.equal(JSON.parse(line).team, "platform");
  assert.equal(JSON.parse(line).team_id, "tm_aaa");
});
