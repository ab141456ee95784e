/**
 * Redis Cluster is not supported (docs/operations.md): the gateway talks to one Redis server and does not
 * follow a cluster's redirections. Pointed at a cluster node that does not hold the counters' slot, it
 * decides by `on_failure` as for any Redis failure, and its log says plainly why, rather than only naming a
 * slot and an address.
 *
 * The test makes a cluster of its own: two `redis-server` nodes on free ports, the first holding every slot.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, waitForLog } from "../helpers/gateway.ts";
import { freePort, startRedis, stopRedis } from "../helpers/redis_server.ts";

const TOKEN = "gw-redis-cluster-0123456789abcdef";

/** Two cluster nodes: `owner` holds all 16384 slots, `other` none (every key it is asked for is MOVED). */
async function startCluster(dir: string) {
  const ports = [freePort(), freePort()];
  const nodes = await Promise.all(ports.map((port) =>
    startRedis(port, [
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      `${dir}/nodes-${port}.conf`,
      "--dir",
      dir,
    ])
  ));
  const [owner, other] = ports.map((port) => new Redis({ port, host: "127.0.0.1", lazyConnect: true }));
  try {
    await owner.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
    await other.call("CLUSTER", "MEET", "127.0.0.1", String(ports[0]));
    const deadline = performance.now() + 10_000;
    while (!String(await other.call("CLUSTER", "INFO")).includes("cluster_state:ok")) {
      if (performance.now() > deadline) throw new Error("the test cluster did not come up");
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    owner.disconnect();
    other.disconnect();
  }
  return {
    otherPort: ports[1],
    stop: () => Promise.all(nodes.map(stopRedis)),
  };
}

Deno.test("Redis Cluster: a node that redirects (MOVED) is a Redis failure whose log says Cluster is not supported", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gw-redis-cluster-" });
  const cluster = await startCluster(dir);
  try {
    const gw = await startGateway(`
redis: { url: "redis://127.0.0.1:${cluster.otherPort}", key_prefix: "gw:", timeout: 5s, on_failure: fail_closed }
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: limited, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"], limits: { rpm: 100 } }
`);
    try {
      const r = await fetch(`${gw.baseURL}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }] }),
      });
      const body = await r.json();
      assert.equal(r.status, 503);
      assert.equal(body.error.code, "rate_limit_store_unavailable");
      const down = await waitForLog(gw, (l) => l.msg === "rate_limit_store_down");
      assert.match(
        String(down.error),
        /^MOVED \d+ 127\.0\.0\.1:\d+ \(redis\.url names a Redis Cluster node; Redis Cluster is not supported: use a single primary/,
      );
    } finally {
      await gw.stop();
    }
  } finally {
    await cluster.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
