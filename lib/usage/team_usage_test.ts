/**
 * A usage record's `team` (the team of the request's token at the time) in the SQLite store (on the request
 * thread and in its worker) and the PostgreSQL store: written and read back (null when none or absent), found
 * by `team=` in the request log and `/admin/usage`, grouped by `group_by=team`, and kept in a JSONL line. The
 * PostgreSQL case runs in CI always; off CI it skips only when the database is unreachable.
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
  await db.insert([
    { ...makeRecord(1, { team: "platform", cost: 0.5 }), uid: "u1" },
    { ...makeRecord(2, { team: "research", token: "bob", cost: 0.25 }), uid: "u2" },
    { ...makeRecord(3, { team: null }), uid: "u3" },
    { ...teamless, uid: "u4" },
    { ...makeRecord(5, { team: "platform", cost: 0.5 }), uid: "u5" },
  ]);
  const log = (await db.listRecords({})).data;
  assert.deepEqual(log.map((r) => [r.request_id, r.team]), [
    ["req_5", "platform"],
    ["req_4", null],
    ["req_3", null],
    ["req_2", "research"],
    ["req_1", "platform"],
  ]);
  const platform = (await db.listRecords({ team: "platform" })).data;
  assert.deepEqual(platform.map((r) => r.request_id), ["req_5", "req_1"]);
  assert.deepEqual((await db.listRecords({ team: "nobody" })).data, []);

  const report = await db.query({ group_by: ["team"] });
  assert.deepEqual(report.groups.map((g) => [g.key.team, g.requests, g.cost]), [
    [null, 2, 0.002],
    ["platform", 2, 1],
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
  const line = entryLine({ record: makeRecord(1, { team: "platform" }), uid: "u1" });
  assert.equal(JSON.parse(line).team, "platform");
});
