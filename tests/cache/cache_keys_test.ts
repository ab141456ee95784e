/**
 * What the response cache keys on and what it never keeps (issue 24, acceptances 2 and 3), over real sockets:
 *
 * - the same request serialised with its keys in another order hits; a changed system prompt, tool,
 *   temperature or seed misses, and so does the same request after a reload that changed the alias's target;
 * - under `scope: token` another token misses; under `scope: shared` it hits;
 * - never cached: an upstream error, a stream cut mid-way, a denied request (a hit is not served past a
 *   limit), `Cache-Control: no-store` and a token with `cache: false`; `no-cache` refreshes the entry;
 * - answers cut by length or ending in tool calls are cached only when the alias opts in.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { reloadWith, startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type CacheUpstream, startCacheUpstream } from "./cache_upstream.ts";

const OTHER_TOKEN = "gw-cache-other-token-0123456789";
const NO_CACHE_TOKEN = "gw-cache-never-token-0123456789";

function config(up: CacheUpstream, echoModel = "echo"): string {
  return `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  mine: { type: chat, targets: [{ provider: up, model: ${echoModel} }], cache: {} }
  shared: { type: chat, targets: [{ provider: up, model: echo }], cache: { scope: shared } }
  failing: { type: chat, targets: [{ provider: up, model: fail, retries: 0 }], cache: {} }
  cutting: { type: chat, targets: [{ provider: up, model: cut, retries: 0 }], cache: {} }
  length: { type: chat, targets: [{ provider: up, model: length }], cache: {} }
  length-opt-in: { type: chat, targets: [{ provider: up, model: length }], cache: { cache_incomplete: true } }
  tools: { type: chat, targets: [{ provider: up, model: tools }], cache: {} }
  tools-opt-in: { type: chat, targets: [{ provider: up, model: tools }], cache: { cache_tool_calls: true } }
  limited:
    type: chat
    targets: [{ provider: up, model: echo }]
    cache: { scope: shared }
    limits: { rpm: 1 }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
  - { name: other, sha256: ${hashToken(OTHER_TOKEN)}, models: ["*"] }
  - { name: never, sha256: ${hashToken(NO_CACHE_TOKEN)}, models: ["*"], cache: false }
`;
}

async function withCache(fn: (gw: TestGateway, up: CacheUpstream) => Promise<void>): Promise<void> {
  const up = startCacheUpstream();
  const gw = await startGateway(config(up));
  try {
    await fn(gw, up);
  } finally {
    await gw.stop();
    await up.stop();
  }
}

/** Posts a raw JSON text (keys in the order written) to chat completions. */
async function chat(
  gw: TestGateway,
  body: string | Record<string, unknown>,
  headers: Record<string, string> = {},
  token = TEST_TOKEN,
): Promise<{ status: number; cache: string | null; text: string; body: Record<string, unknown> }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text);
  } catch { /* a stream */ }
  const content = (parsed.choices as { message: { content: string | null } }[] | undefined)?.[0]?.message
    .content;
  return { status: res.status, cache: res.headers.get("x-cache"), text: content ?? text, body: parsed };
}

const ask = (model: string, content = "Hi", extra: Record<string, unknown> = {}) => ({
  model,
  messages: [{ role: "user", content }],
  ...extra,
});

Deno.test("cache keys: reordered JSON keys hit; system prompt, tool, temperature and seed each miss", async () => {
  await withCache(async (gw, up) => {
    const system = { role: "system", content: "Be brief." };
    const tool = {
      type: "function",
      function: { name: "f", parameters: { type: "object", properties: {} } },
    };
    const base = {
      model: "mine",
      temperature: 0.5,
      seed: 7,
      messages: [system, { role: "user", content: "Hi" }],
    };
    assert.equal((await chat(gw, base)).cache, "MISS");
    const reordered =
      '{"seed":7,"messages":[{"content":"Be brief.","role":"system"},{"content":"Hi","role":"user"}],' +
      '"temperature":0.50,"model":"mine"}';
    const hit = await chat(gw, reordered);
    assert.equal(hit.cache, "HIT", "the same request with its keys in another order, 0.50 for 0.5");
    assert.equal(hit.text, "answer 1: Hi");
    assert.equal(up.calls.length, 1);
    const variants = [
      { ...base, messages: [{ role: "system", content: "Be verbose." }, base.messages[1]] },
      { ...base, tools: [tool] },
      { ...base, temperature: 0.6 },
      { ...base, seed: 8 },
    ];
    for (const [i, variant] of variants.entries()) {
      const answer = await chat(gw, variant);
      assert.equal(answer.cache, "MISS", `variant ${i} is another request`);
      assert.equal(answer.text, `answer ${i + 2}: Hi`);
    }
    assert.equal(up.calls.length, 5);
    // Fields that do not change the answer are not keyed: user, metadata, stream_options, store.
    const same = await chat(gw, { ...base, user: "u1", metadata: { a: "b" }, store: false });
    assert.equal(same.cache, "HIT");
  });
});

Deno.test("cache keys: a reload that changes the alias's target misses", async () => {
  await withCache(async (gw, up) => {
    assert.equal((await chat(gw, ask("mine"))).cache, "MISS");
    assert.equal((await chat(gw, ask("mine"))).cache, "HIT");
    await reloadWith(gw, config(up, "echo-v2"));
    const after = await chat(gw, ask("mine"));
    assert.equal(after.cache, "MISS", "the old target's answer is not served for the new one");
    assert.equal(after.text, "answer 2: Hi");
    assert.equal(up.calls.at(-1)?.model, "echo-v2");
  });
});

Deno.test("cache keys: scope token keeps tokens apart; scope shared serves them all", async () => {
  await withCache(async (gw, up) => {
    assert.equal((await chat(gw, ask("mine"))).cache, "MISS");
    const other = await chat(gw, ask("mine"), {}, OTHER_TOKEN);
    assert.equal(other.cache, "MISS", "another token never reads this token's entry");
    assert.equal(other.text, "answer 2: Hi");
    assert.equal((await chat(gw, ask("shared"))).cache, "MISS");
    const shared = await chat(gw, ask("shared"), {}, OTHER_TOKEN);
    assert.equal(shared.cache, "HIT");
    assert.equal(shared.text, "answer 3: Hi");
    assert.equal(up.calls.length, 3);
  });
});

Deno.test("cache: upstream errors and cut streams are never cached", async () => {
  await withCache(async (gw, up) => {
    for (let i = 0; i < 2; i++) {
      const failed = await chat(gw, ask("failing"));
      assert.equal(failed.status, 502);
      assert.equal(failed.cache, "MISS", "an error answer still says the cache had nothing");
    }
    assert.equal(up.calls.length, 2, "the failure was not replayed");
    // Whether the cut reaches the gateway before its first chunk (a 502, maybe after a retry) or after it (an
    // error event in a 200 stream) depends on how the runtime's fetch delivers the bytes; either way the
    // answer is not whole, and the same request goes upstream again.
    for (let i = 0; i < 2; i++) {
      const before: number = up.calls.length;
      const cut = await chat(gw, ask("cutting", "Hi", { stream: true }));
      assert.equal(cut.cache, "MISS");
      assert.ok(cut.status >= 500 || !cut.text.includes("[DONE]"), "a cut stream is not a whole answer");
      assert.ok(up.calls.length > before, "a cut stream was not cached: the request went upstream again");
    }
  });
});

Deno.test("cache: a denied request is not answered from the cache", async () => {
  await withCache(async (gw, up) => {
    assert.equal((await chat(gw, ask("limited"))).cache, "MISS");
    const denied = await chat(gw, ask("limited"));
    assert.equal(denied.status, 429, "the alias's rpm denies it before the cache is consulted");
    assert.equal(up.calls.length, 1);
  });
});

Deno.test("cache: no-store and a token with cache: false bypass it; no-cache refreshes it", async () => {
  await withCache(async (gw, up) => {
    const stored = await chat(gw, ask("mine"), { "cache-control": "no-store" });
    assert.equal(stored.cache, "BYPASS");
    assert.equal((await chat(gw, ask("mine"))).cache, "MISS", "no-store wrote nothing");
    assert.equal((await chat(gw, ask("mine"))).cache, "HIT");
    const never = await chat(gw, ask("mine", "Hi", {}), {}, NO_CACHE_TOKEN);
    assert.equal(never.cache, "BYPASS");
    const refreshed = await chat(gw, ask("mine"), { "cache-control": "no-cache" });
    assert.equal(refreshed.cache, "MISS");
    assert.equal(refreshed.text, `answer ${up.calls.length}: Hi`);
    const after = await chat(gw, ask("mine"));
    assert.equal(after.cache, "HIT");
    assert.equal(after.text, refreshed.text, "no-cache replaced the entry");
  });
});

Deno.test("cache: length-cut answers and tool calls are cached only when the alias opts in", async () => {
  await withCache(async (gw, up) => {
    for (
      const [alias, cached] of [["length", false], ["length-opt-in", true], ["tools", false], [
        "tools-opt-in",
        true,
      ]] as const
    ) {
      const before: number = up.calls.length;
      await chat(gw, ask(alias));
      const again = await chat(gw, ask(alias));
      assert.equal(again.cache, cached ? "HIT" : "MISS", alias);
      assert.equal(up.calls.length - before, cached ? 1 : 2, alias);
    }
  });
});
