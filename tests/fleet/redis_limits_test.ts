/**
 * Issue 14, acceptance 1: three gateways share one Redis, and a limit or budget holds for the three
 * together. A token limited to N gets 3N concurrent requests spread over the three: exactly N are admitted,
 * the rest are refused with 429, `Retry-After` and the `x-ratelimit-*` headers. The same for tokens per
 * minute (streams) and for a budget (reserved before admission, settled with the real usage).
 *
 * The upstream holds every admitted request until all decisions are made, so no request settles (and gives
 * back part of an estimate) while others are still being decided: the counts are exact, not probable. With
 * `GATEWAY_BIN` the three gateways are three processes of the binary. Redis is the machine's
 * (127.0.0.1:6379, started by .ci/run); each test uses a key prefix of its own.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";
import { type Answer, burst, type Gated, send, startGated } from "../helpers/gated_upstream.ts";

const REDIS_URL = "redis://127.0.0.1:6379";
const N = 5;
const T = {
  probe: "gw-redis-probe-0123456789abcdef",
  rpm: "gw-redis-rpm-0123456789abcdef",
  tpm: "gw-redis-tpm-0123456789abcdef",
  budget: "gw-redis-budget-0123456789abcdef",
};

function config(up: Gated, prefix: string, limits: { tpm: number; budget: number }): string {
  const token = (name: string, secret: string, extra = "") =>
    `  - { name: ${name}, environment: test, sha256: ${hashToken(secret)}, models: ["*"]${extra} }`;
  return `
redis: { url: "${REDIS_URL}", key_prefix: "${prefix}", timeout: 5s, on_failure: fail_closed }
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-gated-0123456789 }
models:
  chat-gated: { type: chat, targets: [ { provider: up, model: gated, retries: 0 } ] }
tokens:
${token("probe", T.probe, ", limits: { tpm: 1000000 }")}
${token("rpm-n", T.rpm, `, limits: { rpm: ${N} }`)}
${token("tpm-n", T.tpm, `, limits: { tpm: ${limits.tpm} }`)}
${token("budget-n", T.budget, `, budget: { tokens: ${limits.budget}, period: day }`)}
`;
}

function assertExactlyN(answers: Answer[], kind: "requests" | "tokens", limit: number) {
  const ok = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 429);
  assert.equal(ok.length, N, `exactly ${N} admitted`);
  assert.equal(refused.length, 2 * N, "every other request refused with 429");
  for (const a of refused) {
    const error = JSON.parse(a.body).error;
    assert.equal(error.code, "rate_limit_exceeded");
    assert.equal(error.type, kind);
    assert.ok(Number(a.headers.get("retry-after")) >= 1, "Retry-After in whole seconds");
    assert.equal(a.headers.get(`x-ratelimit-limit-${kind}`), String(limit));
    assert.equal(a.headers.get(`x-ratelimit-remaining-${kind}`), "0");
    assert.ok(a.headers.get(`x-ratelimit-reset-${kind}`));
  }
  for (const a of ok) assert.equal(a.headers.get(`x-ratelimit-limit-${kind}`), String(limit));
}

async function withFleet(
  fn: (gws: TestGateway[], up: Gated, prefix: string, estimate: number) => Promise<void>,
) {
  const up = startGated();
  up.release();
  const prefix = `test:${crypto.randomUUID()}:`;
  // The gateway's estimate of one request, read from the probe token's headers (limit − remaining).
  const probeGw = await startGateway(config(up, prefix, { tpm: 1, budget: 1 }));
  let estimate: number;
  try {
    const a = await send(probeGw, T.probe);
    assert.equal(a.status, 200);
    estimate = 1_000_000 - Number(a.headers.get("x-ratelimit-remaining-tokens"));
    assert.ok(estimate > 20 && estimate < 100, `estimate ${estimate}`);
  } finally {
    await probeGw.stop();
  }
  up.reset();
  const yaml = config(up, prefix, { tpm: N * estimate, budget: N * estimate });
  const gws = await Promise.all([startGateway(yaml), startGateway(yaml), startGateway(yaml)]);
  try {
    await fn(gws, up, prefix, estimate);
  } finally {
    up.release();
    await Promise.all(gws.map((gw) => gw.stop()));
    await up.stop();
  }
}

Deno.test("three gateways, one Redis: RPM N lets exactly N of 3N concurrent requests through", async () => {
  await withFleet(async (gws, up) => {
    assertExactlyN(await burst(gws, up, T.rpm, false, N), "requests", N);
  });
});

Deno.test("three gateways, one Redis: TPM admits exactly N streams whose estimates fill it", async () => {
  await withFleet(async (gws, up, _prefix, estimate) => {
    up.usage = { prompt: estimate - 5, completion: 5 };
    const answers = await burst(gws, up, T.tpm, true, N);
    assertExactlyN(answers, "tokens", N * estimate);
    for (const a of answers.filter((x) => x.status === 200)) {
      assert.match(a.body, /"usage":\{"prompt_tokens":\d+/);
      assert.match(a.body, /data: \[DONE\]/);
    }
  });
});

Deno.test("three gateways, one Redis: a budget is reserved before admission and never overshot", async () => {
  await withFleet(async (gws, up, prefix, estimate) => {
    // real usage equal to the estimate: N requests use the budget exactly
    up.usage = { prompt: estimate - 5, completion: 5 };
    const answers = await burst(gws, up, T.budget, true, N);
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    assert.equal(ok.length, N);
    assert.equal(refused.length, 2 * N);
    for (const a of refused) {
      assert.equal(JSON.parse(a.body).error.code, "insufficient_quota");
      assert.equal(a.headers.get("x-should-retry"), "false");
    }
    // every admitted request settled: the shared counter is exactly what they used, the whole budget
    const redis = new Redis(REDIS_URL);
    try {
      // The gateways' own clock chose the period: read the one budget counter there is rather than guess its
      // day from this process's clock (the two disagree when the burst straddles midnight UTC).
      const keys = await redis.keys(`${prefix}{limits}:*:budget:tokens:*`);
      assert.equal(keys.length, 1, `one budget counter: ${keys.join(", ")}`);
      const key = keys[0];
      const deadline = performance.now() + 5_000;
      while (Number(await redis.get(key)) !== N * estimate && performance.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(Number(await redis.get(key)), N * estimate, "charged exactly the budget, never above");
      // and no replica lets one more in
      for (const gw of gws) assert.equal((await send(gw, T.budget)).status, 429);
    } finally {
      redis.disconnect();
    }
  });
});
