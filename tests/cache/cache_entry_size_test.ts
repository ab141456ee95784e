/**
 * `cache.max_entry_bytes` on a streamed chat-form miss, over real sockets: an answer longer than an entry may
 * be reaches its client whole and is not stored (the repeat is a miss again), one record each; the gateway
 * stopped holding it once it passed the bound (lib/cache/chunk_accumulator.ts), not after it ended.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startCacheUpstream } from "./cache_upstream.ts";

Deno.test("cache: a streamed answer over max_entry_bytes is served whole and never stored", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(`
cache: { max_entry_bytes: 1KiB }
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  cached: { type: chat, targets: [{ provider: up, model: echo }], cache: { ttl: 10m } }
  chat-plain: { type: chat, targets: [{ provider: up, model: echo }] }
${TEST_TOKENS_YAML}`);
  try {
    const long = "word ".repeat(400);
    const ask = async (content: string) => {
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "cached", stream: true, messages: [{ role: "user", content }] }),
      });
      assert.equal(res.status, 200);
      const data = (await res.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) =>
        e.slice(6)
      );
      assert.equal(data.at(-1), "[DONE]");
      const text = data.slice(0, -1).map((d) => JSON.parse(d).choices[0]?.delta?.content ?? "").join("");
      return { cache: res.headers.get("x-cache"), id: res.headers.get("x-request-id"), text };
    };
    const first = await ask(long);
    const second = await ask(long);
    assert.equal(first.text, `answer 1: ${long}`, "the client got all of it");
    assert.equal(second.text, `answer 2: ${long}`, "answered fresh: nothing was stored");
    assert.deepEqual([first.cache, second.cache], ["MISS", "MISS"]);
    assert.equal(up.calls.length, 2);

    // A short answer on the same alias is still cached.
    await ask("short");
    assert.equal((await ask("short")).cache, "HIT");
    assert.equal(up.calls.length, 3);

    for (const id of [first.id, second.id]) {
      for (let i = 0; i < 500 && !gw.logs.some((l) => l.msg === "request" && l.request_id === id); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const records = gw.logs.filter((l) => l.msg === "request" && l.request_id === id);
      assert.deepEqual(records.map((r) => r.cache), ["miss"], "one record, a miss");
    }
  } finally {
    await gw.stop();
    await up.stop();
  }
});
