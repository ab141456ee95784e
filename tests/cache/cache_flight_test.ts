/**
 * Single-flight and the shared store (issue 24, acceptances 4 and 7), over real sockets:
 *
 * - 50 identical requests at once on one node reach the upstream once; the rest wait for its answer (or, if
 *   they arrive after it, find the entry), every one answered with the same text;
 * - two replicas sharing the Redis store, 25 identical requests each at once: one upstream call in all (the
 *   other replica waits on the first one's fill lock and reads the entry it wrote);
 * - the Redis store down: requests succeed uncached (`x-cache: BYPASS`), `/readyz` stays 200 and says the
 *   cache store is not ok, and the store-error metric counts the failures.
 *
 * The upstream answers after a delay so that the requests overlap; how many overlap does not change what is
 * asserted (one upstream call), only how many of them waited rather than hit.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type CacheUpstream, startCacheUpstream } from "./cache_upstream.ts";

function config(up: CacheUpstream, extra = ""): string {
  return `
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  slow: { type: chat, targets: [{ provider: up, model: slow }], cache: {} }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
${extra}`;
}

async function ask(gw: TestGateway, stream = false): Promise<{ cache: string | null; text: string }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "slow", messages: [{ role: "user", content: "Same question" }], stream }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const content = stream
    ? text.split("\n\n").filter((e) => e.startsWith("data: {")).map((e) =>
      JSON.parse(e.slice(6)).choices[0]?.delta?.content ?? ""
    ).join("")
    : JSON.parse(text).choices[0].message.content;
  return { cache: res.headers.get("x-cache"), text: content };
}

Deno.test("cache single-flight: 50 identical requests at once on one node reach the upstream once", async () => {
  const up = startCacheUpstream();
  const gw = await startGateway(config(up));
  try {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => ask(gw, i % 2 === 0)));
    assert.equal(up.calls.length, 1);
    assert.ok(answers.every((a) => a.text === "answer 1: Same question"), "every one got the one answer");
    assert.equal(answers.filter((a) => a.cache === "MISS").length, 1, "one went upstream");
    assert.equal(answers.filter((a) => a.cache === "HIT").length, 49);
  } finally {
    await gw.stop();
    await up.stop();
  }
});

/** Deletes every key under `prefix`. */
async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis("redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

Deno.test("cache single-flight: two replicas on the Redis store, 25 requests each at once: one upstream call", async () => {
  const up = startCacheUpstream();
  const prefix = `test-cache-fleet-${crypto.randomUUID()}:`;
  const shared = `redis: { url: "redis://127.0.0.1:6379", key_prefix: "${prefix}" }\ncache: { store: redis }`;
  const a = await startGateway(config(up, shared));
  const b = await startGateway(config(up, shared));
  try {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => ask(i % 2 === 0 ? a : b, i % 4 < 2)),
    );
    const seen = JSON.stringify(
      Object.groupBy(answers, (x) => String(x.cache)),
      (_, v) => Array.isArray(v) ? v.length : v,
    );
    assert.equal(up.calls.length, 1, `one upstream call for the whole fleet (x-cache: ${seen})`);
    assert.ok(answers.every((x) => x.text === "answer 1: Same question"));
    assert.equal(answers.filter((x) => x.cache === "MISS").length, 1);
    // The entry lives in Redis under the fleet's prefix.
    const redis = new Redis("redis://127.0.0.1:6379");
    try {
      const keys = await redis.keys(`${prefix}cache:*`);
      assert.equal(keys.length, 1);
    } finally {
      redis.disconnect();
    }
  } finally {
    await a.stop();
    await b.stop();
    await up.stop();
    await dropPrefix(prefix);
  }
});

Deno.test("cache: the Redis store down, requests succeed uncached, /readyz and the metrics say so", async () => {
  const up = startCacheUpstream();
  const down = `redis: { url: "redis://127.0.0.1:1", on_failure: fail_open }\ncache: { store: redis }\n` +
    `server: { public_metrics: true }`;
  const gw = await startGateway(config(up, down));
  try {
    for (let i = 1; i <= 2; i++) {
      const answer = await ask(gw);
      assert.equal(answer.cache, "BYPASS");
      assert.equal(answer.text, `answer ${i}: Same question`);
    }
    const ready = await fetch(`${gw.url}/readyz`);
    assert.equal(ready.status, 200);
    const body = await ready.json();
    assert.deepEqual(body.cache, { store: "redis", ok: false });
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    const errors = Number(/^gateway_cache_store_errors_total (\d+)/m.exec(metrics)?.[1]);
    assert.ok(errors >= 2, `store errors counted: ${errors}`);
    assert.match(metrics, /^gateway_cache_store_up 0$/m);
    assert.match(metrics, /^gateway_cache_bypass_total\{alias="slow"\} 2$/m);
  } finally {
    await gw.stop();
    await up.stop();
  }
});
