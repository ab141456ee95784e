/**
 * Issue 26, acceptance 4: budget alerts from two replicas sharing Redis. A token spends its budget through
 * both gateways; the webhook receives exactly one alert per threshold (50, 80, 100 percent) for the period,
 * each signed with `x-gateway-signature: sha256=<HMAC of the raw body>`, each retried after the receiver's
 * first answer fails. The receiver holds every delivery until the last request has been answered, so the
 * requests are shown not to wait for it.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { send, startGated } from "../helpers/gated_upstream.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
const SPENDER = "gw-alerts-spender-0123456789abcdef";
const PROBE = "gw-alerts-probe-0123456789abcdef";
const ADMIN = "gw-alerts-admin-0123456789abcdef";
const SECRET = "whsec-test-0123456789";

interface Delivery {
  id: string;
  raw: string;
  signature: string | null;
  answered: number;
}

/** A webhook receiver that holds every delivery until released, then fails each alert's first attempt. */
function startReceiver() {
  const deliveries: Delivery[] = [];
  const gate = Promise.withResolvers<void>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const raw = await request.text();
    const id = request.headers.get("x-gateway-alert-id") ?? "";
    const first = !deliveries.some((d) => d.id === id);
    const d: Delivery = { id, raw, signature: request.headers.get("x-gateway-signature"), answered: 0 };
    deliveries.push(d);
    await gate.promise;
    d.answered = first ? 500 : 200;
    return new Response(null, { status: d.answered });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hooks/budget`,
    deliveries,
    release: () => gate.resolve(),
    stop: async () => {
      gate.resolve();
      await server.shutdown();
    },
  };
}

async function hmacHex(secret: string, body: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)));
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("alerts: one signed, retried webhook per budget threshold across two replicas, never waited for", async () => {
  const up = startGated();
  up.release();
  const receiver = startReceiver();
  const prefix = `test:${crypto.randomUUID()}:`;
  const yaml = (budget: number) => `
redis: { url: "${REDIS_URL}", key_prefix: "${prefix}", timeout: 5s }
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
tokens:
  - { name: spender, sha256: ${
    hashToken(SPENDER)
  }, models: ["*"], budget: { tokens: ${budget}, period: month } }
  - { name: probe, sha256: ${hashToken(PROBE)}, models: ["*"], limits: { tpm: 1000000 } }
admin_tokens:
  - { name: ops, token: ${ADMIN} }
alerts:
  - url: "${receiver.url}"
    secret: "${SECRET}"
    headers: { x-team: platform }
    budget_thresholds: [100, 50, 80]
    timeout: 30s
    retries: 3
`;
  let gws: TestGateway[] = [];
  try {
    // The estimate of one request (limit − remaining of a TPM-limited token); real usage is set to it, so ten
    // requests spend a budget of ten estimates exactly.
    const probeGw = await startGateway(yaml(1));
    const probe = await send(probeGw, PROBE);
    await probeGw.stop();
    const estimate = 1_000_000 - Number(probe.headers.get("x-ratelimit-remaining-tokens"));
    up.usage = { prompt: estimate - 5, completion: 5 };
    gws = await Promise.all([startGateway(yaml(10 * estimate)), startGateway(yaml(10 * estimate))]);

    // Every request is answered while the receiver still holds every delivery: none waits for an alert.
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await send(gws[i % 2], SPENDER)).status);
    assert.deepEqual(statuses, [...Array(10).fill(200), 429]);
    assert.ok(receiver.deliveries.every((d) => d.answered === 0), "no delivery answered yet");
    receiver.release();

    // Each alert fails once, is retried, and then delivered; wait for all three, then a while for any extra.
    const delivered = () => receiver.deliveries.filter((d) => d.answered === 200);
    const deadline = performance.now() + 20_000;
    while (delivered().length < 3 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    await new Promise((r) => setTimeout(r, 1_500));
    const ids = new Set(receiver.deliveries.map((d) => d.id));
    assert.equal(
      ids.size,
      3,
      `one alert per threshold, not per replica: ${receiver.deliveries.length} deliveries`,
    );
    assert.equal(delivered().length, 3);
    const bodies = delivered().map((d) => JSON.parse(d.raw)).sort((a, b) => a.threshold - b.threshold);
    assert.deepEqual(bodies.map((b) => b.threshold), [50, 80, 100]);
    for (const b of bodies) {
      assert.equal(b.type, "budget");
      assert.equal(b.scope, "token");
      assert.equal(b.name, "spender");
      assert.equal(b.unit, "tokens");
      assert.equal(b.limit, 10 * estimate);
      assert.ok(b.used >= (b.limit * b.threshold) / 100);
    }
    for (const d of receiver.deliveries) {
      assert.equal(d.signature, `sha256=${await hmacHex(SECRET, d.raw)}`, "signed over the raw body");
      assert.ok(!d.raw.includes(SECRET));
    }
    for (const id of ids) {
      const attempts = receiver.deliveries.filter((d) => d.id === id);
      assert.deepEqual(attempts.map((d) => d.answered), [500, 200], "retried after the failed attempt");
    }

    // The console's list: this replica's alerts and how their delivery went, without the webhook's path.
    const seen = await Promise.all(gws.map(async (gw) => {
      const r = await fetch(`${gw.url}/admin/alerts`, { headers: { authorization: `Bearer ${ADMIN}` } });
      const text = await r.text();
      assert.ok(!text.includes("/hooks/budget"), "the receiver's path is not shown");
      return JSON.parse(text).data as { deliveries: { status: string }[] }[];
    }));
    const listed = seen.flat();
    assert.equal(listed.length, 3);
    assert.ok(listed.every((a) => a.deliveries[0].status === "delivered"));
  } finally {
    await Promise.all(gws.map((gw) => gw.stop()));
    await receiver.stop();
    await up.stop();
  }
});
