/**
 * `/readyz` reports the counter store (Redis or memory) and the usage database as their components last saw
 * them, over a real socket: Redis at a closed port shows `ok: false` once a request has tried it, while the
 * status code and `status` stay those of a ready node (under `fail_open` it keeps serving). The Redis URL's
 * password never appears. Uses the shared Redis (127.0.0.1:6379, started by .ci/run) for the healthy case.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { freePort } from "../helpers/redis_server.ts";

const TOKEN = "gw-readyz-stores-0123456789abcdef";
const PASSWORD = "readyz-secret-pass";

function config(redis: string): string {
  return `
${redis}
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: limited, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"], limits: { rpm: 100000 } }
`;
}

async function chat(gw: TestGateway): Promise<number> {
  const r = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }], max_tokens: 5 }),
  });
  await r.body?.cancel();
  return r.status;
}

async function readyz(
  gw: TestGateway,
): Promise<{ status: number; text: string; body: Record<string, unknown> }> {
  const r = await fetch(`${gw.url}/readyz`);
  const text = await r.text();
  return { status: r.status, text, body: JSON.parse(text) };
}

const SQLITE_OK = { store: "sqlite", ok: true, spilling: false };

Deno.test("readyz: Redis unreachable shows counters ok false (fail_open), status unchanged, no password", async () => {
  const prefix = `test:${crypto.randomUUID()}:`;
  const gw = await startGateway(config(
    `redis: { url: "redis://:${PASSWORD}@127.0.0.1:${freePort()}", key_prefix: "${prefix}", timeout: 100ms, ` +
      `on_failure: fail_open, expected_replicas: 2 }`,
  ));
  try {
    // A limited request reaches the store, fails, and is decided by the local limiter.
    assert.equal(await chat(gw), 200);
    const r = await readyz(gw);
    assert.equal(r.status, 200);
    assert.equal(r.body.status, "ready");
    assert.deepEqual(r.body.counters, { store: "redis", ok: false, on_failure: "fail_open" });
    assert.deepEqual(r.body.usage, SQLITE_OK);
    assert.ok(!r.text.includes(PASSWORD), "the Redis password is not shown");
    assert.ok(!r.text.includes("redis://"), "nor the Redis URL");
  } finally {
    await gw.stop();
  }
});

Deno.test("readyz: Redis up shows counters ok with on_failure; no Redis shows the memory store", async () => {
  const prefix = `test:${crypto.randomUUID()}:`;
  const shared = await startGateway(config(
    `redis: { url: "redis://127.0.0.1:6379", key_prefix: "${prefix}", timeout: 5s, on_failure: fail_closed }`,
  ));
  const alone = await startGateway(config(""));
  try {
    assert.equal(await chat(shared), 200);
    const r = await readyz(shared);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.counters, { store: "redis", ok: true, on_failure: "fail_closed" });
    assert.deepEqual(r.body.usage, SQLITE_OK);
    assert.equal(await chat(alone), 200);
    const m = await readyz(alone);
    assert.equal(m.status, 200);
    assert.deepEqual(m.body.counters, { store: "memory", ok: true });
    assert.deepEqual(m.body.usage, SQLITE_OK);
  } finally {
    await shared.stop();
    await alone.stop();
  }
});
