/**
 * The response cache under guardrails, over real sockets (docs/guardrails.md, docs/caching.md): a request whose
 * guardrails only read its text and let it through is cached like any other; one whose text a guardrail changed
 * (a mask), or whose answer a guardrail checks, is neither served from nor written to the cache, and says
 * `x-cache: BYPASS`, as every answer of a cached alias says what the cache did.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { startCacheUpstream } from "./cache_upstream.ts";

async function ask(gw: TestGateway, model: string, content: string) {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content }] }),
  });
  assert.equal(res.status, 200, model);
  const body = await res.json();
  return { cache: res.headers.get("x-cache"), text: body.choices[0].message.content as string };
}

Deno.test("cache guardrails: an input check that changes nothing keeps the cache; a mask or an output check bypasses it", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
guardrails:
  no-keys: { type: pii, entities: [OPENAI_API_KEY], phase: input }
  mask-emails: { type: pii, entities: [EMAIL], phase: input, action: mask }
  no-cards: { type: pii, entities: [CREDIT_CARD], phase: output }
models:
  chat-input: { type: chat, targets: [{ provider: up, model: echo }], cache: {}, guardrails: [no-keys, mask-emails] }
  chat-output: { type: chat, targets: [{ provider: up, model: echo }], cache: {}, guardrails: [no-cards] }
${TEST_TOKENS_YAML}`);
  try {
    const first = await ask(gw, "chat-input", "Name a colour.");
    const second = await ask(gw, "chat-input", "Name a colour.");
    assert.deepEqual([first.cache, second.cache], ["MISS", "HIT"]);
    assert.equal(second.text, first.text);
    assert.equal(up.calls.length, 1, "the guardrails read the request and let it through: a hit");

    // The mask changed the request's text: the cache is not consulted, and says so.
    const masked = [
      await ask(gw, "chat-input", "Write to alice@example.com."),
      await ask(gw, "chat-input", "Write to alice@example.com."),
    ];
    assert.deepEqual(masked.map((a) => a.cache), ["BYPASS", "BYPASS"]);
    assert.equal(up.calls.length, 3);

    const checked = [await ask(gw, "chat-output", "Hi"), await ask(gw, "chat-output", "Hi")];
    assert.deepEqual(checked.map((a) => a.cache), ["BYPASS", "BYPASS"]);
    assert.equal(up.calls.length, 5);
  } finally {
    await gw.stop();
    await up.stop();
  }
});
