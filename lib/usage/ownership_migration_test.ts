/**
 * The ownership migration (SQLite schema 4 → 5, PostgreSQL 3 → 4) on databases as the earlier gateway left
 * them: a name that was revoked and reissued, and a config token's name. Each stored response, its items and
 * each usage record go to the token that held the name when it was written, so the reissued token gets none
 * of the revoked one's data, and budgets are seeded per identity. The PostgreSQL case runs in CI always; off
 * CI it skips only when the database cannot be reached.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import { createSqliteStore } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import { openPostgresStore } from "./postgres_store.ts";
import type { UsageDatabase } from "./store.ts";
import { SQLITE_TOKENS_SQL } from "../tokens/store_sqlite.ts";
import { POSTGRES_TOKENS_MIGRATION } from "../tokens/postgres_migration.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";

const seconds = (iso: string) => Date.parse(iso) / 1000;

/**
 * What the schema-4 (SQLite) / schema-3 (PostgreSQL) gateway wrote: `svc-a` issued as tok_old on Jan 1 and
 * revoked on Jan 10, then issued again as tok_new on Jan 20; a response and a usage record of each, keyed by
 * the name as that gateway did. (The frozen schema already holds `alice`'s response and record from 2025.)
 */
function rowsByName(bool: (b: boolean) => string): string[] {
  const token = (id: string, created: string, revoked: string | null) =>
    `INSERT INTO tokens (id, name, environment, models, disabled, created_at, updated_at, created_by, revoked_at)
     VALUES ('${id}', 'svc-a', 'prod', '["*"]', ${bool(false)}, '${created}', '${created}', 'ops',
       ${revoked === null ? "NULL" : `'${revoked}'`})`;
  const response = (id: string, created: string, item: string) =>
    `INSERT INTO responses (id, token, environment, created_at, alias, provider, native, previous_response_id,
       input_items, response)
     VALUES ('${id}', 'svc-a', 'prod', ${seconds(created)}, 'chat', 'openai', ${bool(false)}, NULL,
       '[{"id":"${item}","type":"message","role":"user","content":"secret of ${id}"}]',
       '{"id":"${id}","object":"response","output":[]}')`;
  const item = (id: string, itemId: string) =>
    `INSERT INTO response_items (token, item_id, response_id, output, position)
     VALUES ('svc-a', '${itemId}', '${id}', ${bool(false)}, 0)`;
  const usage = (uid: string, time: string, tokens: number) =>
    `INSERT INTO usage (uid, time, request_id, token, environment, alias, provider, upstream_model, endpoint,
       stream, status, outcome, rule, prompt_tokens, completion_tokens, tokens_estimated, cost, latency_ms,
       ttft_ms, attempts, error_code)
     VALUES ('${uid}', '${time}', 'req_${uid}', 'svc-a', 'prod', 'chat', 'openai', 'm', 'responses',
       ${bool(false)}, 200, 'allow', NULL, ${tokens}, 0, ${bool(false)}, 0, 1, NULL, 1, NULL)`;
  return [
    token("tok_old", "2026-01-01T00:00:00.000Z", "2026-01-10T00:00:00.000Z"),
    token("tok_new", "2026-01-20T00:00:00.000Z", null),
    response("resp_old_a", "2026-01-05T00:00:00.000Z", "msg_old"),
    item("resp_old_a", "msg_old"),
    response("resp_new_a", "2026-01-25T00:00:00.000Z", "msg_new"),
    item("resp_new_a", "msg_new"),
    usage("u_old", "2026-01-05T00:00:00.000Z", 100),
    usage("u_new", "2026-01-25T00:00:00.000Z", 7),
  ];
}

/** Each datum is its writer's, and nobody else's. */
async function assertAttributed(db: UsageDatabase): Promise<void> {
  const r = db.responses;
  assert.equal((await r.get("resp_old_a", "tok_old"))?.id, "resp_old_a", "the revoked token keeps its own");
  assert.equal(await r.get("resp_old_a", "tok_new"), null, "the reissued name does not inherit it");
  assert.equal((await r.get("resp_new_a", "tok_new"))?.id, "resp_new_a", "the live holder keeps its own");
  assert.equal(await r.get("resp_new_a", "tok_old"), null);
  assert.equal(await r.get("resp_old_a", "svc-a"), null, "a name is not an owner");
  assert.deepEqual((await r.items(["msg_old", "msg_new"], "tok_new")).map((i) => i?.id ?? null), [
    null,
    "msg_new",
  ]);
  assert.deepEqual((await r.items(["msg_old", "msg_new"], "tok_old")).map((i) => i?.id ?? null), [
    "msg_old",
    null,
  ]);
  assert.equal(await r.inputItems("resp_old_a", "tok_new", {}), null);
  assert.equal(await r.delete("resp_old_a", "tok_new"), false);
  assert.equal(
    (await r.get("resp_old", "cfg_alice"))?.id,
    "resp_old",
    "no issued token had the name: config's",
  );

  const since = "2026-01-01T00:00:00.000Z";
  assert.deepEqual(await db.sumSince("tok_new", since), { tokens: 7, cost: 0 }, "budget seeded per identity");
  assert.deepEqual(await db.sumSince("tok_old", since), { tokens: 100, cost: 0 });
  assert.deepEqual(await db.sumSince("cfg_alice", "2025-01-01T00:00:00.000Z"), { tokens: 15, cost: 0.001 });
}

Deno.test("ownership migration: SQLite schema 4 → 5 gives each row to the token that held the name then", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "ownership-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = new DatabaseSync(path);
    old.exec(SQLITE_SCHEMA_3);
    old.exec(SQLITE_TOKENS_SQL);
    old.exec("UPDATE usage_schema SET version = 4");
    for (const statement of rowsByName((b) => (b ? "1" : "0"))) old.exec(statement);
    old.close();

    const db = await open(path);
    await assertAttributed(db);
    await db.close();
    const file = new DatabaseSync(path);
    const owners = file.prepare("SELECT DISTINCT owner FROM response_items ORDER BY owner").all();
    assert.deepEqual(
      owners.map((o) => o.owner),
      ["tok_new", "tok_old"],
      "the item index follows its response",
    );
    file.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ownership migration: PostgreSQL schema 3 → 4 gives each row to the token that held the name then", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("ownmig");
  try {
    for (const statement of postgresSchema2(schema)) await queryOnce(statement);
    const sql = postgres(TEST_DATABASE_URL, {
      max: 1,
      onnotice: () => {},
      connection: { search_path: schema },
    });
    try {
      for (const statement of POSTGRES_TOKENS_MIGRATION) await sql.unsafe(statement);
      await sql.unsafe("INSERT INTO schema_versions (version) VALUES (3)");
      for (const statement of rowsByName((b) => String(b))) await sql.unsafe(statement);
    } finally {
      await sql.end({ timeout: 5 });
    }
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertAttributed(db);
    } finally {
      await db.close();
    }
    const owners = await queryOnce(`SELECT DISTINCT owner FROM "${schema}".response_items ORDER BY owner`);
    assert.deepEqual(
      owners.map((o) => o.owner),
      ["tok_new", "tok_old"],
      "the item index follows its response",
    );
  } finally {
    await dropSchema(schema);
  }
});
