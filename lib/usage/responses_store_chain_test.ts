/**
 * The longest conversation a store rebuilds ({@linkcode MAX_CHAIN} responses), on every store: out of the
 * contract's loop (responses_store_test.ts) because the default memory store keeps only that many responses, and
 * putting them one by one through the worker or to PostgreSQL takes long (PostgreSQL's are put in one statement).
 */
import assert from "node:assert/strict";
import { UsageQueryError } from "./query.ts";
import { MAX_CHAIN, type ResponsesStore } from "./responses_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import { createMemoryResponsesStore } from "./responses_store_memory.ts";
import { createSqliteStore } from "./sqlite_store.ts";
import { NOW, response } from "./responses_store_test_helpers.ts";
import { dropSchema, queryOnce, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";

/** `resp_1` … `resp_{MAX_CHAIN + 1}`, each chained to the one before: the whole is one response too many. */
async function assertTooLong(store: ResponsesStore): Promise<void> {
  assert.equal((await store.chain(`resp_${MAX_CHAIN}`, "alice"))?.items.length, MAX_CHAIN);
  // The response exists: not the 404 of a missing one, but the too-long refusal naming previous_response_id.
  const last = `resp_${MAX_CHAIN + 1}`;
  await assert.rejects(
    store.chain(last, "alice"),
    (err) =>
      err instanceof UsageQueryError && err.param === "previous_response_id" && err.message.includes(last) &&
      err.message.includes(`${MAX_CHAIN} responses`),
  );
}

// Was BUG: past MAX_CHAIN the walk answered null, the "no such response" of a missing one: the client's 404.
Deno.test("responses: a conversation of more than MAX_CHAIN responses is refused as too long", async () => {
  const sqlite = createSqliteStore(":memory:");
  try {
    for (const store of [createMemoryResponsesStore({ maxResponses: MAX_CHAIN + 1 }), sqlite.responses]) {
      for (let n = 1; n <= MAX_CHAIN + 1; n++) {
        const previous = n === 1 ? null : `resp_${n - 1}`;
        await store.put(
          response(`resp_${n}`, { previous_response_id: previous, inputs: [], outputs: [`a${n}`] }),
        );
      }
      await assertTooLong(store);
    }
  } finally {
    await sqlite.close();
  }
});

Deno.test("postgres responses: a conversation of more than MAX_CHAIN responses is refused as too long", async () => {
  const schema = randomSchema("responses");
  const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema });
  try {
    // The chain its recursive query walks, put in one statement.
    await queryOnce(
      `INSERT INTO "${schema}".responses (id, owner, environment, created_at, alias, provider, native,
         previous_response_id, input_items, response)
       SELECT 'resp_' || n, 'alice', 'prod', $1, 'chat-default', 'openai', false,
         CASE WHEN n = 1 THEN NULL ELSE 'resp_' || (n - 1) END, '[]',
         json_build_object('id', 'resp_' || n, 'output', json_build_array(json_build_object('id', 'a' || n)))
       FROM generate_series(1, $2::int) AS n`,
      [NOW, MAX_CHAIN + 1],
    );
    await assertTooLong(db.responses);
  } finally {
    await db.close();
    await dropSchema(schema);
  }
});
