/**
 * The `responses` table in the usage database: schema migration 2 from a database the previous gateway wrote
 * (schema 1, usage records only), directly and through the worker, and what a reopened database keeps.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSqliteStore, USAGE_SCHEMA_VERSION } from "./sqlite_store.ts";
import { openSqliteWorkerStore } from "./sqlite_worker_store.ts";
import type { StoredResponse } from "./responses_store.ts";
import type { UsageDatabase } from "./store.ts";
import { makeRecord } from "../../tests/helpers/usage.ts";

/**
 * The schema the previous gateway (schema version 1) created, as it wrote it: frozen here so the test keeps
 * meaning what it says when the live migrations change.
 */
const SCHEMA_1 = `
CREATE TABLE usage_schema (version INTEGER NOT NULL);
CREATE TABLE usage (
  uid TEXT NOT NULL, time TEXT NOT NULL, request_id TEXT NOT NULL, token TEXT, environment TEXT, alias TEXT,
  provider TEXT, upstream_model TEXT, endpoint TEXT NOT NULL, stream INTEGER NOT NULL, status INTEGER NOT NULL,
  outcome TEXT NOT NULL, rule TEXT, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
  tokens_estimated INTEGER NOT NULL, cost REAL NOT NULL, latency_ms REAL NOT NULL, ttft_ms REAL,
  attempts INTEGER NOT NULL, error_code TEXT
);
CREATE UNIQUE INDEX usage_uid ON usage (uid);
CREATE INDEX usage_time ON usage (time);
CREATE INDEX usage_token_time ON usage (token, time);
CREATE INDEX usage_alias_time ON usage (alias, time);
CREATE INDEX usage_provider_time ON usage (provider, time);
CREATE INDEX usage_environment_time ON usage (environment, time);
CREATE INDEX usage_outcome_time ON usage (outcome, time);
INSERT INTO usage_schema (version) VALUES (1);
INSERT INTO usage VALUES ('u1', '2025-01-01T00:00:00.000Z', 'req_old', 'alice', 'prod', 'chat-default', 'openai',
  'gpt-4o-mini', 'chat', 0, 200, 'allow', NULL, 10, 5, 0, 0.001, 100, NULL, 1, NULL);
`;

/** A database file as the previous gateway left it: schema 1 with one usage record. */
async function schema1Db(): Promise<{ dir: string; path: string }> {
  const dir = await Deno.makeTempDir({ prefix: "responses-migrate-" });
  const path = `${dir}/usage.sqlite`;
  const db = new DatabaseSync(path);
  db.exec(SCHEMA_1);
  db.close();
  return { dir, path };
}

const stored: StoredResponse = {
  id: "resp_1",
  token: "alice",
  environment: "prod",
  created_at: 1_750_000_000,
  alias: "chat-default",
  provider: "openai",
  native: false,
  previous_response_id: null,
  input_items: [{
    id: "msg_1",
    type: "message",
    role: "user",
    content: [{ type: "input_text", text: "hi" }],
  }],
  response: { id: "resp_1", object: "response", output: [] },
};

/** The old usage record is still there and counted, new ones go in, and responses are stored beside them. */
async function assertMigrated(store: UsageDatabase, path: string): Promise<void> {
  assert.equal((await store.query({})).totals.requests, 1, "the schema-1 record survived the migration");
  await store.insert([{ ...makeRecord(2), uid: "u2" }]);
  assert.equal((await store.query({})).totals.requests, 2);
  await store.responses.put(stored);
  assert.deepEqual(await store.responses.get("resp_1", "alice"), stored);
  await store.close();

  const db = new DatabaseSync(path);
  assert.equal(db.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
  assert.equal(db.prepare("SELECT COUNT(*) AS n FROM usage_schema").get()?.n, 1);
  const indexes = db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'responses'")
    .all().map((r) => String(r.name)).sort();
  assert.deepEqual(indexes, ["responses_created_at", "sqlite_autoindex_responses_1"]);
  db.close();
}

Deno.test("sqlite responses: a schema-1 usage database is migrated in place, keeping its records", async () => {
  const { dir, path } = await schema1Db();
  await assertMigrated(createSqliteStore(path), path);
  // Reopened: nothing is migrated twice, and the stored response is still there.
  const again = createSqliteStore(path);
  assert.deepEqual(await again.responses.get("resp_1", "alice"), stored);
  assert.equal((await again.query({})).totals.requests, 2);
  await again.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("worker responses: a schema-1 usage database is migrated when the worker opens it", async () => {
  const { dir, path } = await schema1Db();
  await assertMigrated(await openSqliteWorkerStore(path), path);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("sqlite responses: a database of a newer schema than this one is still refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "responses-newer-" });
  const path = `${dir}/usage.sqlite`;
  const db = new DatabaseSync(path);
  db.exec(`CREATE TABLE usage_schema (version INTEGER NOT NULL);
    INSERT INTO usage_schema VALUES (${USAGE_SCHEMA_VERSION + 1})`);
  db.close();
  assert.throws(
    () => createSqliteStore(path),
    new RegExp(
      `schema version ${USAGE_SCHEMA_VERSION + 1} is newer than this gateway's \\(${USAGE_SCHEMA_VERSION}\\)`,
    ),
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("sqlite responses: calls after the usage database is closed reject", async () => {
  const store = createSqliteStore(":memory:");
  await store.close();
  await assert.rejects(() => store.responses.put(stored), /closed/);
  await assert.rejects(() => store.responses.get("resp_1", "alice"), /closed/);
  await assert.rejects(() => store.responses.prune(new Date().toISOString()), /closed/);
});
