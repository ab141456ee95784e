/**
 * Issue 14 with PostgreSQL (the shared test database, a private schema per test, dropped after):
 * - acceptance 4: two gateway processes starting at the same moment against an empty schema both come up,
 *   with one schema between them;
 * - a stored response made on one replica is read and continued (`previous_response_id`) on the other, and
 *   `/admin/usage` on either counts the requests of both;
 * - the URL's password never reaches a response, `/admin/config` or a log line, and a database that is down
 *   at start, or hangs, does not keep the gateway from serving.
 *
 * The gateways are separate processes: `GATEWAY_BIN` when set (CI's Bun binary), else `deno run main.ts`.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { POSTGRES_SCHEMA_VERSION } from "../../lib/usage/postgres_schema.ts";
import { startGateway } from "../helpers/gateway.ts";
import { dropSchema, queryOnce, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { type Replica, spawnReplica } from "../helpers/replica.ts";
import { startSilentServer } from "../helpers/silent_server.ts";
import { backstop, eventually } from "../helpers/backstop.ts";

const TOKEN = "gw-pg-replica-0123456789abcdef";
const ADMIN = "gw-pg-replica-admin-0123456789abcdef";
const PASSWORD = "pg-Secret-9f3kQ2zX";

function config(url: string, schema: string, dir: string, timeout = "5s"): string {
  return `
postgres: { url: "${url}", schema: ${schema}, timeout: ${timeout} }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 20ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: replica-user, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

Deno.test("postgres: two replicas starting at once share one schema, stored responses and usage", async () => {
  const schema = randomSchema("replicas");
  const dir = await Deno.makeTempDir();
  const url = TEST_DATABASE_URL.replace("postgres@", `postgres:${PASSWORD}@`);
  assert.notEqual(url, TEST_DATABASE_URL, "the URL carries a password (trust auth ignores it)");
  const files = [`${dir}/a.yaml`, `${dir}/b.yaml`];
  await Deno.mkdir(`${dir}/a`);
  await Deno.mkdir(`${dir}/b`);
  await Deno.writeTextFile(files[0], config(url, schema, `${dir}/a`));
  await Deno.writeTextFile(files[1], config(url, schema, `${dir}/b`));
  const replicas = await Promise.all(files.map((file) => spawnReplica(file)));
  const [a, b] = replicas;
  try {
    const versions = await queryOnce(`SELECT version FROM "${schema}".schema_versions ORDER BY version`);
    assert.deepEqual(
      versions.map((r) => Number(r.version)),
      Array.from({ length: POSTGRES_SCHEMA_VERSION }, (_, i) => i + 1),
      "one schema, migrated once",
    );
    const tables = await queryOnce(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
      [schema],
    );
    assert.deepEqual(tables.map((r) => r.table_name), [
      "response_items",
      "responses",
      "schema_versions",
      "teams",
      "token_audit",
      "token_secrets",
      "token_version",
      "tokens",
      "usage",
    ]);

    // A conversation that moves between replicas, as behind a load balancer.
    const clientA = new OpenAI({ apiKey: TOKEN, baseURL: `${a.url}/v1`, maxRetries: 0 });
    const clientB = new OpenAI({ apiKey: TOKEN, baseURL: `${b.url}/v1`, maxRetries: 0 });
    const first = await clientA.responses.create({ model: "chat-echo", input: "first turn on replica A" });
    const again = await clientB.responses.retrieve(first.id);
    assert.equal(again.id, first.id);
    assert.deepEqual(again.output, first.output);
    const second = await clientB.responses.create({
      model: "chat-echo",
      input: "second turn on replica B",
      previous_response_id: first.id,
    });
    assert.equal(second.status, "completed");
    const items = await clientA.responses.inputItems.list(second.id);
    assert.equal(items.data.length, 1);
    const deleted = await clientA.responses.delete(first.id) as unknown;
    assert.deepEqual(deleted, { id: first.id, object: "response", deleted: true });
    await assert.rejects(clientB.responses.retrieve(first.id), (e) => e instanceof OpenAI.NotFoundError);

    // `/admin/usage` on either replica counts both replicas' requests (from PostgreSQL).
    const adminUsage = async (replica: Replica) => {
      const res = await fetch(`${replica.url}/admin/usage?token=replica-user`, {
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      assert.equal(res.status, 200);
      return (await res.json()).totals.requests as number;
    };
    const deadline = Date.now() + 10_000;
    while (await adminUsage(b) < 6 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await adminUsage(b), 6);
    assert.equal(await adminUsage(a), 6);

    // The URL's password is nowhere a client or an operator reading the logs can see it.
    const adminConfig = await fetch(`${a.url}/admin/config`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    assert.equal(adminConfig.status, 200);
    assert.ok(!(await adminConfig.text()).includes(PASSWORD));
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    for (const r of replicas) {
      assert.ok(!r.logs.join("\n").includes(PASSWORD), "the password never reaches a log line");
    }
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("postgres: a database down at start, then hung, does not stop serving; its password is never logged", async () => {
  const database = startSilentServer();
  const dir = await Deno.makeTempDir();
  // Ten minutes for each database call: a request that waited on the hung database would be held that long.
  const url = `postgres://gw:${PASSWORD}@127.0.0.1:${database.port}/test`;
  const gw = await startGateway(config(url, "down", dir, "10m"));
  const chat = async () => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    await res.body?.cancel();
    return res.status;
  };
  try {
    assert.equal(await chat(), 200, "served while the database refuses connections");
    assert.ok(gw.logs.some((l) => l.msg === "usage_database_unreachable_at_start"));
    // Stored responses cannot be read meanwhile: a 503 the client may retry, not a 404 or a 500.
    const stored = await fetch(`${gw.baseURL}/responses/resp_unknown`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(stored.status, 503);
    assert.equal((await stored.json()).error.code, "store_unavailable");
    assert.ok(stored.headers.get("retry-after"));

    // The database hangs now: the gateway's next call to it (its usage records', its tokens' version check) is
    // held. A request answered within the backstop meanwhile waited on none of them.
    database.hang();
    await eventually("the gateway has a call held by the hung database", () => database.held > 0);
    assert.equal(await backstop(chat(), "a request while the database hangs"), 200);
  } finally {
    // Ended first, so the gateway's held calls fail and its stop waits on none of them.
    await database.close();
    await gw.stop(100);
    assert.ok(!JSON.stringify(gw.logs).includes(PASSWORD), "the password never reaches a log line");
    await Deno.remove(dir, { recursive: true });
  }
});
