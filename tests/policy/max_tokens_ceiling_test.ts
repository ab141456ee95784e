/**
 * A token's `max_tokens` ceiling on an OpenAI-compatible upstream: a request that sets no limit goes up with
 * `max_completion_tokens` (OpenAI's current field; its reasoning models refuse `max_tokens`), one that sets
 * a higher limit goes up with its own field lowered.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway } from "../helpers/gateway.ts";

const CAPPED = "gw-capped-token-0123456789abcdef";

Deno.test("max_tokens ceiling: set as max_completion_tokens when the client set no limit; a client's own field is lowered", async () => {
  const fake = startFakeOpenAI();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-ok: { type: chat, targets: [ { provider: up, model: gpt-ok } ] }
tokens:
  - { name: capped, sha256: ${hashToken(CAPPED)}, models: ["*"], max_tokens: 64 }
`);
  const ask = async (limits: Record<string, number>) => {
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${CAPPED}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-ok", messages: [{ role: "user", content: "Hi" }], ...limits }),
    });
    assert.equal(res.status, 200, await res.text());
    return fake.requests.at(-1)!.body;
  };
  try {
    const none = await ask({});
    assert.equal(none.max_completion_tokens, 64);
    assert.equal("max_tokens" in none, false, JSON.stringify(none));
    assert.equal((await ask({ max_tokens: 1000 })).max_tokens, 64);
    assert.equal((await ask({ max_completion_tokens: 1000 })).max_completion_tokens, 64);
  } finally {
    await gw.stop();
    await fake.stop();
  }
});
