/**
 * A replica that starts while PostgreSQL (its token store) is down has never loaded the tokens issued through
 * the admin API. A key it does not know may be one of them, so it is answered 503 `token_store_unavailable`
 * with `Retry-After`, in each API's own error shape (OpenAI's, Anthropic's Messages, Google's Gemini), never
 * the 401 `invalid_api_key` clients take for a bad key and do not retry; the config file's tokens keep working.
 * Once the store has loaded, the issued token is served and a bad key is the 401 again.
 *
 * The database is the shared test one (a schema of this test's). The late replica is given a port nothing
 * listens on (connections refused, as by a database that is down); a TCP proxy of the test to the database is
 * started on that port later (`helpers/tcp_proxy.ts`).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { dropSchema, postgresOrSkip, randomSchema, TEST_DATABASE_URL } from "../helpers/postgres.ts";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp_proxy.ts";
import { freePort } from "../helpers/redis_server.ts";
import { eventually } from "../helpers/backstop.ts";

const ADMIN = "gw-unloaded-admin-0123456789abcdef";
const FILE_TOKEN = "gw-unloaded-file-0123456789abcdef";
const BAD_KEY = "gw-unloaded-made-up-0123456789abcdef";

function config(url: string, schema: string, dir: string): string {
  return `
postgres: { url: "${url}", schema: ${schema}, timeout: 500ms, pool_size: 2 }
usage: { spill: "${dir}/spill.jsonl", flush_interval: 50ms }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: from-file, environment: test, sha256: ${hashToken(FILE_TOKEN)}, models: ["*"] }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

/** A chat completion (OpenAI's API) with `key`: status, headers and body. */
async function chat(gw: TestGateway, key: string) {
  const r = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
  });
  return { status: r.status, headers: r.headers, body: await r.json() };
}

/** A Messages request as Anthropic's clients send it (`x-api-key`). */
async function messages(gw: TestGateway, key: string) {
  const r = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
  });
  return { status: r.status, headers: r.headers, body: await r.json() };
}

/** A Gemini `generateContent` as Google's clients send it (`x-goog-api-key`). */
async function generate(gw: TestGateway, key: string) {
  const r = await fetch(`${gw.url}/v1beta/models/chat-echo:generateContent`, {
    method: "POST",
    headers: { "x-goog-api-key": key, "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
  });
  return { status: r.status, headers: r.headers, body: await r.json() };
}

Deno.test("a replica started with its token store down answers unknown keys 503 until the store loads, then 401", async (t) => {
  if (!await postgresOrSkip(t)) return;
  const schema = randomSchema("gw_unloaded");
  const dir = await Deno.makeTempDir();
  const database = new URL(TEST_DATABASE_URL);
  const port = freePort();
  let proxy: TcpProxy | undefined;
  let late: TestGateway | undefined;
  try {
    // A token issued on a replica that reaches the database.
    const first = await startGateway(config(TEST_DATABASE_URL, schema, `${dir}`));
    let issued: { token: string };
    try {
      const r = await fetch(`${first.url}/admin/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "issued", models: ["*"] }),
      });
      assert.equal(r.status, 201);
      issued = await r.json();
    } finally {
      await first.stop();
    }

    // Another replica starts while the database refuses it.
    const url = new URL(TEST_DATABASE_URL);
    url.host = `127.0.0.1:${port}`;
    await Deno.mkdir(`${dir}/late`);
    late = await startGateway(config(url.href, schema, `${dir}/late`));
    const ready = (await (await fetch(`${late.url}/readyz`)).json()).tokens;
    assert.equal(ready.ok, false);
    assert.equal(ready.loaded_at, null);

    // OpenAI's API: a 503 to retry, for the issued token and for any key the replica cannot tell from one.
    for (const key of [issued.token, BAD_KEY]) {
      const r = await chat(late, key);
      assert.equal(r.status, 503, JSON.stringify(r.body));
      assert.equal(r.body.error.code, "token_store_unavailable");
      assert.equal(r.body.error.type, "server_error");
      assert.equal(r.headers.get("retry-after"), "2");
      assert.ok(!JSON.stringify(r.body).includes(key), "the key is not echoed");
    }
    // Anthropic's Messages API and Google's Gemini API, each in its own shape.
    const m = await messages(late, issued.token);
    assert.equal(m.status, 503);
    assert.equal(m.body.type, "error");
    assert.equal(m.body.error.type, "api_error");
    assert.equal(m.headers.get("retry-after"), "2");
    const g = await generate(late, issued.token);
    assert.equal(g.status, 503);
    assert.equal(g.body.error.code, 503);
    assert.equal(g.body.error.status, "UNAVAILABLE");
    // The config file's tokens keep working; a request with no key at all is still the 401.
    assert.equal((await chat(late, FILE_TOKEN)).status, 200);
    assert.equal((await messages(late, FILE_TOKEN)).status, 200);
    const none = await fetch(`${late.baseURL}/chat/completions`, { method: "POST", body: "{}" });
    assert.equal(none.status, 401);
    await none.body?.cancel();

    // The database answers: the stored tokens load, the issued one is served and a made-up key is the 401.
    proxy = startTcpProxy(Number(database.port || 5432), database.hostname, { port });
    await eventually("the issued token is served once the store loads", async () => {
      const r = await chat(late!, issued.token);
      return r.status === 200;
    });
    const bad = await chat(late, BAD_KEY);
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error.code, "invalid_api_key");
    assert.equal((await messages(late, BAD_KEY)).status, 401);
    assert.equal((await generate(late, BAD_KEY)).status, 401);
  } finally {
    await late?.stop();
    await proxy?.close();
    await dropSchema(schema);
    await Deno.remove(dir, { recursive: true });
  }
});
