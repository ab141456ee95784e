/**
 * The token tables arrive by schema migration in databases earlier gateways wrote: SQLite schema 3 → 4 (in
 * place and through the worker) and PostgreSQL schema 2 → 3, keeping what was there. The PostgreSQL case runs
 * in CI always; off CI it skips only when the database cannot be reached.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSqliteStore, USAGE_SCHEMA_VERSION } from "../usage/sqlite_store.ts";
import { openSqliteWorkerStore } from "../usage/sqlite_worker_store.ts";
import { openPostgresStore } from "../usage/postgres_store.ts";
import { POSTGRES_SCHEMA_VERSION } from "../usage/postgres_schema.ts";
import type { UsageDatabase } from "../usage/store.ts";
import {
  dropSchema,
  postgresOrSkip,
  queryOnce,
  randomSchema,
  TEST_DATABASE_URL,
} from "../../tests/helpers/postgres.ts";
import { postgresSchema2, SQLITE_SCHEMA_3 } from "../../tests/helpers/frozen_schemas.ts";
import type { AuditEntry, StoredToken } from "./types.ts";
import { TokenNameTakenError } from "./types.ts";

const token: StoredToken = {
  id: "tok_000000000000000000000001",
  name: "migrated",
  environment: "default",
  description: null,
  models: ["*"],
  endpoints: null,
  limits: { rpm: 5 },
  budget: null,
  max_tokens: null,
  cache: null,
  team: null,
  team_id: null,
  end_user_limits: null,
  guardrails: null,
  expires_at: null,
  disabled: false,
  created_at: "2026-11-24T09:00:00.000Z",
  updated_at: "2026-11-24T09:00:00.000Z",
  created_by: "ops-admin",
  revoked_at: null,
  rotated_at: null,
  secrets: [{ sha256: "d".repeat(64), expires_at: null }],
};

const audit: AuditEntry = {
  id: "aud_000000000000000000000001",
  time: "2026-11-24T09:00:00.000Z",
  actor: "ops-admin",
  action: "create",
  token_id: token.id,
  token_name: token.name,
  changes: { name: token.name },
};

/** What was there is still there; tokens go in and come back, and the live-name index holds. */
async function assertMigrated(db: UsageDatabase): Promise<void> {
  assert.equal((await db.query({})).totals.requests, 1, "the schema-3 usage record survived");
  assert.equal(
    (await db.responses.get("resp_old", "cfg_alice"))?.id,
    "resp_old",
    "the stored response survived",
  );
  assert.deepEqual(await db.tokens.loadAll(), { version: 0, tokens: [], teams: [] });
  await db.tokens.put(token, audit);
  assert.deepEqual(await db.tokens.loadAll(), { version: 1, tokens: [token], teams: [] });
  assert.deepEqual((await db.tokens.audit({ limit: 10 })).entries, [audit]);
  await assert.rejects(
    db.tokens.put({ ...token, id: "tok_000000000000000000000002" }, { ...audit, id: "aud_2" }),
    TokenNameTakenError,
  );
}

Deno.test("token store migration: a schema-3 SQLite database gains the token tables, in place and via the worker", async () => {
  for (const open of [(p: string) => Promise.resolve(createSqliteStore(p)), openSqliteWorkerStore]) {
    const dir = await Deno.makeTempDir({ prefix: "tokens-migrate-" });
    const path = `${dir}/usage.sqlite`;
    const old = new DatabaseSync(path);
    old.exec(SQLITE_SCHEMA_3);
    old.close();
    const db = await open(path);
    await assertMigrated(db);
    await db.close();

    const file = new DatabaseSync(path);
    assert.equal(USAGE_SCHEMA_VERSION, 17);
    assert.deepEqual(file.prepare("SELECT version FROM usage_schema").all().map((r) => r.version), [
      USAGE_SCHEMA_VERSION,
    ]);
    const tables = file.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'token%'")
      .all().map((r) => String(r.name)).sort();
    assert.deepEqual(tables, ["token_audit", "token_secrets", "token_version", "tokens"]);
    const live = file.prepare("SELECT sql FROM sqlite_master WHERE name = 'tokens_live_name'").get();
    assert.match(String(live?.sql), /UNIQUE INDEX .* WHERE revoked_at IS NULL/);
    file.close();

    // Reopened: nothing migrates twice, and the token is still there.
    const again = await open(path);
    assert.deepEqual((await again.tokens.loadAll()).tokens, [token]);
    await again.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("token store migration: a schema-2 PostgreSQL schema gains the token tables", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("tokmig");
  try {
    for (const statement of postgresSchema2(schema)) await queryOnce(statement);
    const db = await openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
    try {
      await assertMigrated(db);
    } finally {
      await db.close();
    }
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.equal(POSTGRES_SCHEMA_VERSION, 16);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
    );
    const [index] = await queryOnce(
      "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'tokens_live_name'",
      [schema],
    );
    assert.match(String(index?.indexdef), /UNIQUE INDEX .* WHERE \(revoked_at IS NULL\)/);
  } finally {
    await dropSchema(schema);
  }
});
