/**
 * The `responses` table in the usage database: schema migrations 2 and 3 from databases earlier gateways
 * wrote (schema 1, usage records only; schema 2, stored responses without the item index), directly and
 * through the worker, and what a reopened database keeps; the item index is used and kept in step.
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
  owner: "alice",
  environment: "prod",
  created_at: 1_750_000_000,
  alias: "chat-default",
  provider: "openai",
  native: false,
  upstream_id: null,
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
  const itemIndexes = db.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'response_items'",
  ).all().map((r) => String(r.name)).sort();
  assert.deepEqual(itemIndexes, ["response_items_lookup", "response_items_response"]);
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

/**
 * What the schema-2 gateway added (migration 2, frozen as it was written), with one stored response: a user
 * message in, an assistant message and a function call out.
 */
const SCHEMA_2_ADDITIONS = `
CREATE TABLE responses (
  id TEXT NOT NULL PRIMARY KEY, token TEXT NOT NULL, environment TEXT NOT NULL, created_at REAL NOT NULL,
  alias TEXT NOT NULL, provider TEXT NOT NULL, native INTEGER NOT NULL, previous_response_id TEXT,
  input_items TEXT NOT NULL, response TEXT NOT NULL
);
CREATE INDEX responses_created_at ON responses (created_at);
UPDATE usage_schema SET version = 2;
INSERT INTO responses VALUES ('resp_old', 'alice', 'prod', 1750000000, 'chat-default', 'openai', 0, NULL,
  '[{"id":"msg_in","type":"message","role":"user","content":"hi"}]',
  '{"id":"resp_old","object":"response","output":[{"id":"msg_out","type":"message","role":"assistant",` +
  `"content":[{"type":"output_text","text":"hello","annotations":[]}]},{"id":"fc_out","type":"function_call",` +
  `"call_id":"call_1","name":"f","arguments":"{}"},"not an item"]}');
`;

Deno.test("sqlite responses: a schema-2 database is migrated: its responses' items are indexed, upstream_id added", async () => {
  const { dir, path } = await schema1Db();
  const old = new DatabaseSync(path);
  old.exec(SCHEMA_2_ADDITIONS);
  old.close();

  for (
    const open of [
      (p: string) => Promise.resolve(createSqliteStore(p)),
      (p: string) => openSqliteWorkerStore(p),
    ]
  ) {
    const store = await open(path);
    // No token issued through the admin API ever had the name: the rows are the config file's token's.
    assert.equal(await store.responses.get("resp_old", "alice"), null, "owned by identity, not by name");
    const got = await store.responses.get("resp_old", "cfg_alice");
    assert.equal(got?.upstream_id, null, "the new column is null for responses stored before it");
    assert.deepEqual(
      (await store.responses.items(["fc_out", "msg_in", "msg_out", "msg_in"], "cfg_alice")).map((item) =>
        item?.id
      ),
      ["fc_out", "msg_in", "msg_out", "msg_in"],
      "items stored before the index are found",
    );
    assert.deepEqual(await store.responses.items(["msg_out"], "cfg_bob"), [null]);
    assert.equal((await store.query({})).totals.requests, 1, "the usage record survived");
    await store.close();
  }
  const db = new DatabaseSync(path);
  assert.equal(db.prepare("SELECT version FROM usage_schema").get()?.version, USAGE_SCHEMA_VERSION);
  assert.equal(db.prepare("SELECT COUNT(*) AS n FROM response_items").get()?.n, 3, "indexed once");
  db.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("sqlite responses: an item lookup uses the index; delete and retention remove its rows", async () => {
  const dir = await Deno.makeTempDir({ prefix: "responses-items-" });
  const path = `${dir}/usage.sqlite`;
  const store = createSqliteStore(path);
  for (let i = 0; i < 3; i++) {
    await store.responses.put({
      ...stored,
      id: `resp_${i}`,
      created_at: stored.created_at + i * 86_400,
      input_items: [{ ...stored.input_items[0], id: `msg_in_${i}` }],
      response: { id: `resp_${i}`, object: "response", output: [{ id: `msg_out_${i}`, type: "message" }] },
    });
  }
  const db = new DatabaseSync(path);
  const rows = () =>
    db.prepare("SELECT response_id FROM response_items ORDER BY response_id").all()
      .map((r) => String(r.response_id));
  assert.deepEqual(rows(), ["resp_0", "resp_0", "resp_1", "resp_1", "resp_2", "resp_2"]);
  const plan = db.prepare(
    `EXPLAIN QUERY PLAN SELECT i.position FROM response_items i JOIN responses r ON r.id = i.response_id
     AND r.owner = i.owner WHERE i.owner = 'alice' AND i.item_id = 'msg_in_1' ORDER BY i.rowid DESC LIMIT 1`,
  ).all().map((r) => String(r.detail)).join("; ");
  assert.match(plan, /response_items_lookup/, plan);
  assert.doesNotMatch(plan, /SCAN i\b/, plan);

  assert.equal(await store.responses.delete("resp_1", "alice"), true);
  assert.deepEqual(rows(), ["resp_0", "resp_0", "resp_2", "resp_2"]);
  const cutoff = new Date((stored.created_at + 86_400) * 1000).toISOString();
  assert.equal(await store.responses.prune(cutoff, 100), 1);
  assert.deepEqual(rows(), ["resp_2", "resp_2"]);
  db.close();
  await store.close();
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
  await assert.rejects(() => store.responses.prune(new Date().toISOString(), 100), /closed/);
});
