/**
 * Separation between credentials, and an upstream that tries to send the gateway elsewhere: promises of
 * SECURITY.md not held by another test. A client token never opens `/admin/*`, an admin token never calls the
 * API, and an upstream's redirect is not followed (its target never sees the request or the provider key).
 *
 * @module
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

const ADMIN = "gw-admin-tenancy-0123456789abcdef";
const PROVIDER_KEY = "sk-tenancy-provider-key-0123456789";

Deno.test("tenancy: client tokens never open /admin/*, admin tokens never call the API", async () => {
  const gw = await startGateway(`
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [{ provider: local, model: echo }] }
${TEST_TOKENS_YAML}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`);
  try {
    for (const path of ["/admin/targets", "/admin/usage", "/admin/config", "/metrics"]) {
      const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      const body = await res.json();
      assert.ok(res.status === 401 || res.status === 403, `${path} with a client token: ${res.status}`);
      assert.equal(typeof body.error.message, "string");
      const ok = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(ok.status, 200, `${path} with the admin token`);
      await ok.arrayBuffer();
    }
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
    });
    assert.equal(chat.status, 401);
    assert.equal((await chat.json()).error.code, "invalid_api_key");
    const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(models.status, 401);
    await models.arrayBuffer();
  } finally {
    await gw.stop();
  }
});

Deno.test("upstream control: a redirect from the upstream is not followed; its target never sees the request", async () => {
  let elsewhere = 0;
  const target = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
    elsewhere++;
    return Response.json({ choices: [] });
  });
  const redirecting = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    await request.arrayBuffer();
    return new Response(null, {
      status: 307,
      headers: { location: `http://127.0.0.1:${target.addr.port}/v1/chat/completions` },
    });
  });
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "http://127.0.0.1:${redirecting.addr.port}/v1", api_key: ${PROVIDER_KEY} }
models:
  chat-up: { type: chat, targets: [{ provider: up, model: m, retries: 0 }] }
${TEST_TOKENS_YAML}`);
  try {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-up", messages: [{ role: "user", content: "hi" }] }),
    });
    const text = await res.text();
    assert.ok(res.status >= 400 && res.status !== 500, `${res.status} ${text}`);
    assert.equal(JSON.parse(text).error.type.length > 0, true);
    assert.equal(res.headers.get("location"), null, "the redirect is not passed to the client");
    assert.equal(elsewhere, 0, "the redirect target was never called");
  } finally {
    await gw.stop();
    await redirecting.shutdown();
    await target.shutdown();
  }
});
