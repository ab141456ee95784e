/**
 * `x-cache` on the answers of a cached alias the cache had no part in, over real sockets (docs/caching.md): a
 * request refused before its lookup (a content rule, a limit) and a token count say `BYPASS`, and their
 * records `cache: bypass`; a request refused before its alias was known (a malformed body, a model the token
 * may not use) names no alias, and says nothing of any alias's cache.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { startCacheUpstream } from "./cache_upstream.ts";

async function post(gw: TestGateway, path: string, body: Record<string, unknown>) {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify(body),
  });
  await res.body?.cancel();
  return { status: res.status, cache: res.headers.get("x-cache") };
}

Deno.test("cache refusals: an answer of a cached alias refused before its lookup says x-cache: BYPASS", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  cached:
    type: chat
    targets: [{ provider: up, model: echo }]
    cache: {}
    content_rules: [{ name: nope, pattern: forbidden, action: deny }]
tokens:
  - { name: app, sha256: ${hashToken(TEST_TOKEN)}, models: [cached], limits: { rpm: 3 } }
`);
  try {
    const ask = (content: string, extra: Record<string, unknown> = {}) =>
      post(gw, "/chat/completions", { model: "cached", messages: [{ role: "user", content }], ...extra });
    assert.deepEqual(await ask("hello"), { status: 200, cache: "MISS" });
    assert.deepEqual(await ask("forbidden words"), { status: 400, cache: "BYPASS" }, "a content rule");
    const denied = await waitForLog(gw, (l) => l.msg === "request" && l.status === 400);
    assert.equal(denied.cache, "bypass");
    const counted = await post(gw, "/messages/count_tokens", {
      model: "cached",
      messages: [{ role: "user", content: "hello" }],
    });
    assert.deepEqual(counted, { status: 200, cache: "BYPASS" }, "a token count");
    // rpm 3: hits count too, so one of the next few requests is the limit's 429.
    let limited = await ask("hello");
    for (let i = 0; i < 5 && limited.status !== 429; i++) limited = await ask("hello");
    assert.deepEqual(limited, { status: 429, cache: "BYPASS" }, "a limit");

    // No alias known: nothing to say of one's cache.
    const malformed = await post(gw, "/chat/completions", { model: "cached", messages: "hello" });
    assert.deepEqual(malformed, { status: 400, cache: null }, "a body refused before its alias is resolved");
    const other = await post(gw, "/chat/completions", {
      model: "other",
      messages: [{ role: "user", content: "x" }],
    });
    assert.deepEqual(other, { status: 404, cache: null }, "a model the token may not use");
    assert.equal(up.calls.length, 1);
  } finally {
    await gw.stop();
    await up.stop();
  }
});
