/**
 * `group_by=token_id` in the SQLite store (on the request thread and in its worker) and the PostgreSQL store:
 * one group per token identity, so a token revoked and a new one issued under its name are two groups with
 * their own totals and denials, each saying the name its records carry (`key.token`); records with no
 * identity (unauthenticated) are one group with no name; paging and other keys work as for any key. The
 * PostgreSQL case runs in CI always; off CI it skips only when the database is unreachable.
 */
import assert from "node:assert/strict";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import type { UsageDatabase } from "./store.ts";

async function assertTokenGroups(db: UsageDatabase): Promise<void> {
  await db.insert([
    { ...makeRecord(1, { token: "alpha", token_id: "tok_old", cost: 0.5 }), uid: "u1" },
    {
      ...makeRecord(2, {
        token: "alpha",
        token_id: "tok_old",
        cost: 0,
        outcome: "deny",
        rule: "token.rpm",
        status: 429,
      }),
      uid: "u2",
    },
    // The name issued again after the first token was revoked: another identity.
    { ...makeRecord(3, { token: "alpha", token_id: "tok_new", cost: 0.125 }), uid: "u3" },
    // A config file's token: its id is `cfg_<name>`.
    { ...makeRecord(4, { token: "bob", cost: 0.25 }), uid: "u4" },
    // Unauthenticated: neither name nor identity.
    { ...makeRecord(5, { token: null, status: 401, cost: 0 }), uid: "u5" },
  ]);

  const report = await db.query({ group_by: ["token_id"] });
  assert.deepEqual(report.groups.map((g) => [g.key, g.requests, g.cost, g.denials]), [
    [{ token_id: null, token: null }, 1, 0, {}],
    [{ token_id: "cfg_bob", token: "bob" }, 1, 0.25, {}],
    [{ token_id: "tok_new", token: "alpha" }, 1, 0.125, {}],
    [{ token_id: "tok_old", token: "alpha" }, 2, 0.5, { "token.rpm": 1 }],
  ]);

  // A page of them names its tokens too.
  const page = await db.query({ group_by: ["token_id"], limit: 1, offset: 2 });
  assert.deepEqual(page.groups.map((g) => [g.key, g.requests]), [[
    { token_id: "tok_new", token: "alpha" },
    1,
  ]]);
  assert.equal(page.next_offset, 3);

  // With other keys: the name once, whether asked for or not.
  const byDay = await db.query({ token: "alpha", group_by: ["token_id", "day"] });
  assert.deepEqual(byDay.groups.map((g) => [g.key, g.requests]), [
    [{ token_id: "tok_new", day: "2025-01-01", token: "alpha" }, 1],
    [{ token_id: "tok_old", day: "2025-01-01", token: "alpha" }, 2],
  ]);
  const both = await db.query({ token: "alpha", group_by: ["token", "token_id"] });
  assert.deepEqual(both.groups.map((g) => g.key), [
    { token: "alpha", token_id: "tok_new" },
    { token: "alpha", token_id: "tok_old" },
  ]);
}

Deno.test("usage token_id: groups by token identity in the SQLite store, on the request thread and in the worker", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "usage-token-" });
    const db = await open(`${dir}/usage.sqlite`);
    try {
      await assertTokenGroups(db);
    } finally {
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("usage token_id: groups by token identity in the PostgreSQL store", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("usagetoken");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  try {
    await assertTokenGroups(db);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
});
