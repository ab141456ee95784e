/**
 * A usage record's text that PostgreSQL's `text` cannot hold (NUL, a lone surrogate: an upstream's error code
 * may carry them) is stored as SQLite stores it, instead of failing its whole batch at every retry.
 */
import assert from "node:assert/strict";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { createSqliteStore } from "./sqlite_store.ts";

Deno.test("postgres usage: a record with NUL and a lone surrogate is stored, and reads back as SQLite's", async () => {
  const records = [
    { ...makeRecord(0, { error_code: "upstream\u0000code", rule: "x\ud800" }), uid: "u0" },
    { ...makeRecord(1, { error_code: "plain" }), uid: "u1" },
  ];
  const schema = randomSchema("usage_text");
  const pg = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  const sqlite = createSqliteStore(":memory:");
  try {
    await pg.insert(records);
    await sqlite.insert(records);
    const [fromPg, fromSqlite] = await Promise.all([pg.listRecords({}), sqlite.listRecords({})]);
    assert.equal(fromPg.data.length, 2);
    assert.deepEqual(fromPg.data, fromSqlite.data);
    const codes = fromPg.data.map((r) => r.error_code).sort();
    assert.deepEqual(codes, ["plain", "upstream\uFFFDcode"]);
  } finally {
    await sqlite.close();
    await pg.close();
    await dropSchema(schema);
  }
});
