/**
 * Issue 14, acceptance 2: Redis stopped mid-run. A `fail_closed` gateway answers limited requests with 503
 * `rate_limit_store_unavailable` and `Retry-After`; a `fail_open` one limits locally to its share (limit ÷
 * expected replicas). Each logs the change of state once and shows it in `/metrics`. When Redis is back,
 * both enforce the shared limits again, without a restart.
 *
 * The test runs its own `redis-server` on a free port, so stopping it disturbs no one else.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { freePort, startRedis, stopRedis } from "../helpers/redis_server.ts";
import { backstop, eventually } from "../helpers/backstop.ts";

const TOKEN = "gw-redis-fault-0123456789abcdef";
const UNLIMITED = "gw-redis-free-0123456789abcdef";
const PROBE = "gw-redis-probe-0123456789abcdef";
const BUDGETED = "gw-redis-budgeted-0123456789abcdef";
const SINGLE = "gw-redis-single-0123456789abcdef";
const RPM = 4;
/**
 * The per-call timeout. Not 100 ms: with Redis up, a gateway a loaded machine stalls that long would take a
 * call for a failure (a 503 with fail_closed, an extra down line). The paused-Redis tests wait it out once each.
 */
const REDIS_TIMEOUT = "3s";

function config(port: number, prefix: string, onFailure: string, replicas: number): string {
  return `
server: { public_metrics: true }
redis:
  url: "redis://127.0.0.1:${port}"
  key_prefix: "${prefix}"
  timeout: ${REDIS_TIMEOUT}
  on_failure: ${onFailure}
  expected_replicas: ${replicas}
providers:
  local: { type: builtin }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
tokens:
  - { name: limited, environment: test, sha256: ${hashToken(TOKEN)}, models: ["*"], limits: { rpm: ${RPM} } }
  - { name: free, environment: test, sha256: ${hashToken(UNLIMITED)}, models: ["*"] }
  - { name: probe, environment: test, sha256: ${hashToken(PROBE)}, models: ["*"], limits: { rpm: 100000 } }
  - { name: budgeted, environment: test, sha256: ${
    hashToken(BUDGETED)
  }, models: ["*"], budget: { tokens: 1000000, period: day } }
  - { name: single, environment: test, sha256: ${
    hashToken(SINGLE)
  }, models: ["*"], limits: { concurrent: 1 } }
`;
}

async function chat(gw: TestGateway, token = TOKEN) {
  const r = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }], max_tokens: 5 }),
  });
  const body = await r.json();
  return { status: r.status, headers: r.headers, body };
}

async function statuses(gw: TestGateway, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await chat(gw)).status);
  return out;
}

async function storeUp(gw: TestGateway): Promise<number> {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("gateway_rate_limit_store_up "));
  assert.ok(line, "the gauge is exported");
  return Number(line.split(" ")[1]);
}

/** Runs a `redis-cli` command against the test's own Redis; its answer. */
async function redisCli(port: number, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("redis-cli", { args: ["-p", String(port), ...args], stdout: "piped" })
    .output();
  return new TextDecoder().decode(out.stdout).trim();
}

const count = (gw: TestGateway, msg: string) => gw.logs.filter((l) => l.msg === msg).length;

/** Waits until the gateway decides by Redis again (one probe per half second). */
async function untilUp(gw: TestGateway): Promise<void> {
  await eventually("the gateway notices Redis is back", async () => {
    if (count(gw, "rate_limit_store_up") > 0) return true;
    await chat(gw, PROBE);
    return false;
  }, { everyMs: 100 });
}

Deno.test("Redis stopped mid-run: fail_closed 503s, fail_open limits locally, both recover without restart", async () => {
  const port = freePort();
  let redis = await startRedis(port);
  const prefix = `test:${crypto.randomUUID()}:`;
  const closed = await startGateway(config(port, prefix, "fail_closed", 2));
  const open = await startGateway(config(port, prefix, "fail_open", 2));
  try {
    // Redis up: the limit is shared by both gateways
    assert.deepEqual(await statuses(closed, RPM - 1), [200, 200, 200]);
    assert.deepEqual(await statuses(open, 2), [200, 429]);
    assert.equal(await storeUp(closed), 1);

    await stopRedis(redis);

    // fail_closed: every limited request is refused with 503 and Retry-After, in OpenAI's error shape
    for (let i = 0; i < 5; i++) {
      const a = await chat(closed);
      assert.equal(a.status, 503);
      assert.equal(a.body.error.code, "rate_limit_store_unavailable");
      assert.equal(a.body.error.type, "server_error");
      assert.equal(a.headers.get("retry-after"), "1");
    }
    // a token with no limit and no budget does not need the store
    assert.equal((await chat(closed, UNLIMITED)).status, 200);
    // fail_open: a fresh local limiter at the replica's share, RPM ÷ 2
    assert.deepEqual(await statuses(open, RPM), [200, 200, 429, 429]);
    // one log line per change of state, not one per request; the gauge shows it
    assert.equal(count(closed, "rate_limit_store_down"), 1);
    assert.equal(count(open, "rate_limit_store_down"), 1);
    assert.equal(await storeUp(closed), 0);
    assert.equal(await storeUp(open), 0);
    assert.match(
      await (await fetch(`${closed.url}/metrics`)).text(),
      /gateway_rate_limit_store_fallbacks_total\{mode="fail_closed"\} [1-9]/,
    );

    redis = await startRedis(port);
    await untilUp(closed);
    await untilUp(open);
    assert.equal(count(closed, "rate_limit_store_up"), 1);
    assert.equal(await storeUp(closed), 1);

    // the restarted Redis is empty; the shared limit holds again, on both, with no restart of the gateways
    const after = [...await statuses(closed, RPM + 2), ...await statuses(open, RPM + 2)];
    assert.equal(after.filter((s) => s === 200).length, RPM, `exactly ${RPM} of ${after.join(",")}`);
    assert.equal(after.filter((s) => s === 429).length, RPM + 4);
  } finally {
    await closed.stop();
    await open.stop();
    await stopRedis(redis).catch(() => {});
  }
});

Deno.test("a slow Redis (past the per-call timeout) counts as down, and answering again as up", async () => {
  const port = freePort();
  const redis = await startRedis(port);
  const gw = await startGateway(config(port, `test:${crypto.randomUUID()}:`, "fail_closed", 1));
  try {
    assert.equal((await chat(gw)).status, 200);
    // Redis stops answering the gateway's scripts for ten minutes (CLIENT PAUSE WRITE holds every command that
    // may write, which a script is, and answers once the pause is in effect, so the request below is sent while
    // Redis is paused). The 503 within the backstop is the per-call timeout's: Redis's own answer would
    // come after the pause, ten minutes on.
    assert.equal(await redisCli(port, "CLIENT", "PAUSE", "600000", "WRITE"), "OK");
    const a = await backstop(chat(gw), "the limited request refused while Redis is paused");
    assert.equal(a.status, 503);
    // Redis answers again (a WRITE pause leaves the CLIENT command free), and the gateway notices.
    assert.equal(await redisCli(port, "CLIENT", "UNPAUSE"), "OK");
    await untilUp(gw);
    assert.equal(count(gw, "rate_limit_store_down"), 1);
  } finally {
    // A test that failed during the pause leaves it on: ended first, nothing waits on Redis to stop.
    await redisCli(port, "CLIENT", "UNPAUSE");
    await gw.stop();
    await stopRedis(redis);
  }
});

Deno.test("a reservation Redis ran after the gateway gave up on it is given back: no slot is lost", async () => {
  const port = freePort();
  const redis = await startRedis(port);
  const gw = await startGateway(config(port, `test:${crypto.randomUUID()}:`, "fail_closed", 1));
  try {
    assert.equal((await chat(gw, SINGLE)).status, 200);
    // Paused, Redis queues the reserve script and runs it when the test ends the pause, long after the gateway's
    // timeout: the request is refused (503), and the concurrency slot the script then takes must not stay taken.
    // The pause is ten minutes, ended by the test: however slowly the request is sent, Redis is still paused.
    assert.equal(await redisCli(port, "CLIENT", "PAUSE", "600000", "WRITE"), "OK");
    assert.equal((await backstop(chat(gw, SINGLE), "the request refused while Redis is paused")).status, 503);
    assert.equal(await redisCli(port, "CLIENT", "UNPAUSE"), "OK");
    await untilUp(gw);
    // One slot (concurrent: 1): each request after the pause is admitted, none refused as token.concurrent.
    const after = [];
    for (let i = 0; i < 3; i++) after.push(await chat(gw, SINGLE));
    assert.deepEqual(after.map((a) => a.status), [200, 200, 200], JSON.stringify(after.map((a) => a.body)));
  } finally {
    // A test that failed during the pause leaves it on: ended first, nothing waits on Redis to stop.
    await redisCli(port, "CLIENT", "UNPAUSE");
    await gw.stop();
    await stopRedis(redis);
  }
});

Deno.test("a Redis password works, and never reaches /admin/config, a client or the log", async () => {
  const password = "redis-Pa55-word-Zq81";
  const wrong = "wrong-Pa55-word-Yx27";
  const admin = "gw-redis-admin-0123456789abcdef";
  const port = freePort();
  const redis = await startRedis(port, ["--requirepass", password]);
  const withAdmin = (url: string) =>
    config(port, `test:${crypto.randomUUID()}:`, "fail_closed", 1)
      .replace(`redis://127.0.0.1:${port}`, url) +
    `admin_tokens:\n  - { name: ops, sha256: ${hashToken(admin)} }\n`;
  const good = await startGateway(withAdmin(`redis://:${password}@127.0.0.1:${port}`));
  const bad = await startGateway(withAdmin(`redis://default:${wrong}@127.0.0.1:${port}/0`));
  try {
    assert.deepEqual(await statuses(good, RPM + 1), [200, 200, 200, 200, 429]);
    const refused = await chat(bad);
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, "rate_limit_store_unavailable");
    for (const gw of [good, bad]) {
      const shown =
        await (await fetch(`${gw.url}/admin/config`, { headers: { authorization: `Bearer ${admin}` } }))
          .text();
      assert.ok(shown.includes('"routing"'), "the admin config answered");
      assert.ok(!shown.includes(password) && !shown.includes(wrong), "no password in /admin/config");
    }
    const down = await waitForLog(bad, (l) => l.msg === "rate_limit_store_down");
    assert.ok(String(down.error).length > 0, "the log says why");
    const logs = JSON.stringify([...good.logs, ...bad.logs]);
    assert.ok(!logs.includes(password) && !logs.includes(wrong), "no password in the log");
    assert.ok(!JSON.stringify(refused.body).includes(wrong));
  } finally {
    await good.stop();
    await bad.stop();
    await stopRedis(redis);
  }
});

Deno.test("a gateway starts while its Redis is down, and limits once Redis comes up", async () => {
  const port = freePort();
  // a token with a budget: seeding its counter at start must not keep the gateway from serving
  const gw = await startGateway(config(port, `test:${crypto.randomUUID()}:`, "fail_closed", 1));
  let redis: Deno.ChildProcess | undefined;
  try {
    assert.equal((await chat(gw, BUDGETED)).status, 503);
    assert.ok(gw.logs.some((l) => l.msg === "rate_limit_store_unreachable_at_start"));
    assert.ok(gw.logs.some((l) => l.msg === "budget_seed_failed" && l.token === "budgeted"));
    redis = await startRedis(port);
    await untilUp(gw);
    assert.equal((await chat(gw, BUDGETED)).status, 200);
    assert.deepEqual(await statuses(gw, RPM + 1), [200, 200, 200, 200, 429]);
  } finally {
    await gw.stop();
    if (redis) await stopRedis(redis);
  }
});
