/**
 * The start-up migration of the PostgreSQL schema, against the shared test database (a private schema per
 * test, dropped after): it is given its own time, not a call's; it works in a schema made for a role with no
 * other privilege, and a migration the database refuses for good stops the start instead of passing for an
 * outage.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { dropSchema, queryOnce, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { MigrationRefusedError } from "./postgres_schema.ts";
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

/** A login role of the test's own, with no privilege beyond PUBLIC's (no CREATE on the database). */
async function withRole(fn: (role: string, url: string) => Promise<void>): Promise<void> {
  const role = randomSchema("gwrole");
  await queryOnce(`CREATE ROLE ${role} LOGIN`);
  try {
    const url = new URL(TEST_DATABASE_URL);
    url.username = role;
    url.password = "";
    await fn(role, url.href);
  } finally {
    await queryOnce(`DROP ROLE IF EXISTS ${role}`);
  }
}

Deno.test("postgres schema: a schema made for a role without CREATE on the database is migrated and used", async () => {
  await withRole(async (role, url) => {
    const schema = randomSchema("precreated");
    try {
      // Least privilege: the DBA makes the schema, owned by the gateway's role, and grants nothing else.
      await queryOnce(`CREATE SCHEMA "${schema}" AUTHORIZATION ${role}`);
      const store = await openPostgresStore({ url, schema, timeoutMs: 5_000 });
      try {
        await store.insert([{ ...makeRecord(0), uid: "least-privilege" }]);
        assert.equal((await store.query({})).totals.requests, 1);
        assert.deepEqual((await store.tokens.loadAll()).tokens, [], "the token store answers");
      } finally {
        await store.close();
      }
    } finally {
      await dropSchema(schema);
    }
  });
});

Deno.test("postgres schema: a migration the database refuses stops the start with what the role lacks", async () => {
  await withRole(async (_role, url) => {
    const schema = randomSchema("refused");
    const unreachable: unknown[] = [];
    try {
      // No schema and no CREATE on the database: no retry can ever migrate it, so this is not an outage.
      const err = await openPostgresStore({
        url,
        schema,
        timeoutMs: 5_000,
        onUnreachable: (e) => unreachable.push(e),
      }).then(() => null, (e: unknown) => e);
      assert.ok(err instanceof MigrationRefusedError, `refused, not served as if down: ${err}`);
      assert.match(
        err.message,
        /refused to migrate schema "refused_[0-9a-f]+" \(SQLSTATE 42501: permission denied/,
      );
      assert.match(err.message, /needs CREATE on the database, or an existing schema/);
      assert.deepEqual(unreachable, []);
    } finally {
      await dropSchema(schema);
    }
  });
});
