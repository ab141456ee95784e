/**
 * The start-up migration of the PostgreSQL schema, against the shared test database (a private schema per
 * test, dropped after): it is given its own time, not a call's.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { dropSchema, queryOnce, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { openPostgresStore } from "./postgres_store.ts";

/** Holds `LOCK TABLE <table> IN <mode>` in a transaction of its own until `release` is called. */
async function holdLock(table: string, mode: string) {
  const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  let locked = () => {};
  const taken = new Promise<void>((resolve) => locked = resolve);
  const holding = sql.begin(async (tx) => {
    await tx.unsafe(`LOCK TABLE ${table} IN ${mode} MODE`);
    locked();
    await released;
  });
  await Promise.race([taken, holding]);
  return {
    release,
    async end() {
      release();
      await holding;
      await sql.end({ timeout: 5 });
    },
  };
}

Deno.test("postgres schema: a start-up migration that outlasts postgres.timeout still completes", async () => {
  const schema = randomSchema("migwait");
  try {
    await (await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 })).close();
    // A database from before the request log's index, whose usage table is busy: a replica's insert holds
    // the table while the index the open adds waits for it, five times longer than a call may take.
    await queryOnce(`DROP INDEX "${schema}".usage_time_uid`);
    const busy = await holdLock(`"${schema}".usage`, "ROW EXCLUSIVE");
    const timer = setTimeout(busy.release, 1_000);
    try {
      const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 200 });
      await store.close();
    } finally {
      clearTimeout(timer);
      await busy.end();
    }
    const index = await queryOnce(
      "SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'usage_time_uid'",
      [schema],
    );
    assert.equal(index.length, 1, "the index was built");
  } finally {
    await dropSchema(schema);
  }
});
