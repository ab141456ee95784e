/**
 * The response cache after a reload that changes an alias's cache settings, over real sockets: an entry stored
 * under an opt-in (`cache_tool_calls`, `cache_incomplete`) is no longer replayed once the operator turns the
 * opt-in off, though the store still holds it for the TTL it was written with; the request goes upstream.
 * (A shortened `ttl` applying to older entries is lib/cache/response_cache_test.ts's, with an injected clock.)
 */
import assert from "node:assert/strict";
import {
  reloadWith,
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
} from "../helpers/gateway.ts";
import { type CacheUpstream, startCacheUpstream } from "./cache_upstream.ts";

function config(up: CacheUpstream, optIn: boolean): string {
  return `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  chat-tools: { type: chat, targets: [{ provider: up, model: tools }], cache: { cache_tool_calls: ${optIn} } }
  chat-length: { type: chat, targets: [{ provider: up, model: length }], cache: { cache_incomplete: ${optIn} } }
${TEST_TOKENS_YAML}`;
}

/** Asks `model` the same question each time: the answer's `x-cache`, and its tool call's id or its text. */
async function ask(gw: TestGateway, model: string): Promise<{ cache: string | null; said: string }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "clean up" }] }),
  });
  assert.equal(res.status, 200);
  const body = await res.json();
  const message = body.choices[0].message;
  return { cache: res.headers.get("x-cache"), said: message.tool_calls?.[0]?.id ?? message.content };
}

Deno.test("cache reload: turning cache_tool_calls or cache_incomplete off stops replaying entries stored under it", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(config(up, true));
  try {
    assert.deepEqual(await ask(gw, "chat-tools"), { cache: "MISS", said: "call_1" });
    assert.deepEqual(
      await ask(gw, "chat-tools"),
      { cache: "HIT", said: "call_1" },
      "opted in: the call is replayed",
    );
    assert.deepEqual(await ask(gw, "chat-length"), { cache: "MISS", said: "answer 2: clean up" });
    assert.deepEqual(await ask(gw, "chat-length"), { cache: "HIT", said: "answer 2: clean up" });
    assert.equal(up.calls.length, 2);

    await reloadWith(gw, config(up, false));
    // The stored tool call is not re-issued to the agent: the upstream decides afresh, and nothing is kept.
    assert.deepEqual(await ask(gw, "chat-tools"), { cache: "MISS", said: "call_3" });
    assert.deepEqual(await ask(gw, "chat-tools"), { cache: "MISS", said: "call_4" });
    assert.deepEqual(await ask(gw, "chat-length"), { cache: "MISS", said: "answer 5: clean up" });
    assert.equal(up.calls.length, 5);

    // Opted in again: the answers are cached again (the fresh ones replaced nothing, so the first are back).
    await reloadWith(gw, config(up, true));
    assert.equal((await ask(gw, "chat-tools")).cache, "HIT");
  } finally {
    await gw.stop();
    await up.stop();
  }
});
