/**
 * The response cache on a Redis that stalls (it takes the commands and answers none): one request per probe
 * interval waits for `cache.timeout` before going upstream uncached, not every request of a cached alias. Once a
 * call has timed out, the requests that follow go upstream at once (`x-cache: BYPASS`) without Redis being
 * tried, until the next probe; the first probe Redis answers makes the cache used again.
 *
 * Redis is the shared one of the development and CI machines (127.0.0.1:6379), under a key prefix of this
 * test's, behind a TCP proxy of the test that holds its replies (`helpers/tcp_proxy.ts`) and counts the commands
 * that reached it meanwhile. The cache's probe clock is the test's, so which request is the probe is decided by
 * the test, never by how fast the machine is.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { createRedisCacheStore } from "../../lib/cache/redis_store.ts";
import { createResponseCache } from "../../lib/cache/response_cache.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { STORE_PROBE_INTERVAL_MS } from "../../lib/timers/store_breaker.ts";
import { startTcpProxy } from "../helpers/tcp_proxy.ts";

const TOKEN = "gw-cache-stall-0123456789abcdef";

const CONFIG = `
providers:
  local: { type: builtin }
models:
  cached: { type: chat, targets: [ { provider: local, model: echo } ], cache: {} }
tokens:
  - { name: stall, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`;

Deno.test("response cache: a stalled Redis holds one request per probe interval, the others bypass at once", async () => {
  const proxy = startTcpProxy(6379);
  const prefix = `test-cache-stall-${crypto.randomUUID()}:`;
  const store = createRedisCacheStore({
    url: `redis://127.0.0.1:${proxy.port}`,
    keyPrefix: prefix,
    timeoutMs: 200,
    maxEntryBytes: 1_000_000,
  });
  let clock = 1_000_000;
  const cache = createResponseCache({ store, lockWaitMs: 1_000, timeoutMs: 200, now: () => clock });
  const parsed = parseConfigText(CONFIG, { source: "<test>", env: {} });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const state = { config: parsed.config, providers: createProviders(parsed.config.providers) };
  const handler = createGateway({ state: () => state, logger: createMemoryLogger(), services: { cache } });
  const ask = async (text: string) => {
    const body = JSON.stringify({ model: "cached", messages: [{ role: "user", content: text }] });
    const r = await handler(
      new Request("http://gateway.test/v1/chat/completions", {
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          "content-length": String(new TextEncoder().encode(body).byteLength),
        },
        body,
      }),
    );
    assert.equal(r.status, 200);
    await r.body?.cancel();
    return r.headers.get("x-cache");
  };
  try {
    assert.ok(await store.whenReady(30_000), "connected to Redis");
    assert.equal(await ask("kept"), "MISS");
    assert.equal(await ask("kept"), "HIT");

    proxy.stall();
    // The first request waits for the cache's timeout, then goes upstream uncached.
    assert.equal(await ask("kept"), "BYPASS");
    assert.equal(proxy.sentWhileStalled.length, 1);
    assert.equal(cache.ok, false);
    // Until the next probe Redis is not tried: these go upstream at once, while it is still stalled.
    for (let i = 0; i < 3; i++) assert.equal(await ask(`other ${i}`), "BYPASS");
    assert.equal(await ask("kept"), "BYPASS");
    assert.equal(proxy.sentWhileStalled.length, 1, "the stalled Redis was tried once, by the first request");

    // A probe interval later one request tries it again (and waits), the next one does not.
    clock += STORE_PROBE_INTERVAL_MS;
    assert.equal(await ask("kept"), "BYPASS");
    assert.equal(proxy.sentWhileStalled.length, 2);
    assert.equal(await ask("kept"), "BYPASS");
    assert.equal(proxy.sentWhileStalled.length, 2);

    // Redis answers again: the next probe finds it and the entry is served from it once more.
    proxy.release();
    clock += STORE_PROBE_INTERVAL_MS;
    assert.equal(await ask("kept"), "HIT");
    assert.equal(cache.ok, true);
  } finally {
    proxy.release();
    await cache.close();
    await proxy.close();
    const redis = new Redis("redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
});
