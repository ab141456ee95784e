/**
 * An issued token's `cache` (docs/admin_api.md) over real sockets, with the usage database's SQLite token
 * store: a token issued through `/admin/tokens` with `cache: false` bypasses the cache of an alias that has
 * one (every request reaches the upstream, answered `x-cache: BYPASS`), and once a PATCH clears it
 * (`cache: null`) the same request misses, then hits; the change holds at once, without a restart.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { startCacheUpstream } from "./cache_upstream.ts";

const ADMIN = "gw-cache-issued-admin-0123456789abcdef";

async function admin(gw: TestGateway, method: string, path: string, body: unknown) {
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function chat(gw: TestGateway, secret: string): Promise<{ cache: string | null; text: string }> {
  const response = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "cached", messages: [{ role: "user", content: "Hi" }] }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return { cache: response.headers.get("x-cache"), text: body.choices[0].message.content };
}

Deno.test("cache: an issued token with cache false bypasses; cleared by PATCH, it misses then hits", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  cached: { type: chat, targets: [{ provider: up, model: echo }], cache: {} }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`);
  try {
    const token = await admin(gw, "POST", "/admin/tokens", { name: "ci", models: ["cached"], cache: false });
    assert.equal(token.cache, false);
    const secret = String(token.token);

    assert.deepEqual(await chat(gw, secret), { cache: "BYPASS", text: "answer 1: Hi" });
    assert.deepEqual(await chat(gw, secret), { cache: "BYPASS", text: "answer 2: Hi" });
    assert.equal(up.calls.length, 2, "both requests reached the upstream");

    const cleared = await admin(gw, "PATCH", `/admin/tokens/${token.id}`, { cache: null });
    assert.equal(cleared.cache, null);
    assert.deepEqual(await chat(gw, secret), { cache: "MISS", text: "answer 3: Hi" });
    assert.deepEqual(await chat(gw, secret), { cache: "HIT", text: "answer 3: Hi" }, "the stored answer");
    assert.equal(up.calls.length, 3, "the hit never reached the upstream");
  } finally {
    await gw.stop();
    await up.stop();
  }
});
