/**
 * A chat request with `n` choices is estimated at its output limit for each choice: a budget reserves it, TPM
 * charges it up front and a money budget prices it, so concurrent requests asking for many choices cannot
 * overshoot a budget n-fold (the audit's repro: ten requests of n=10, max_tokens=100 all admitted on a
 * 3,000-token budget and 10,100 tokens spent). Deterministic: the first request is held at the upstream until
 * the second has been judged, so both are in flight together whatever the machine's speed.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { startGateway } from "../helpers/gateway.ts";

const SECRET = "gw-choices-token-0123456789abcdef";

/** An upstream whose first call waits for `release`; later calls answer at once. Every answer uses 1,010. */
function heldUpstream() {
  const first = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  let calls = 0;
  const ac = new AbortController();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", signal: ac.signal, onListen() {} },
    async (req) => {
      await req.json();
      if (calls++ === 0) {
        first.resolve();
        await release.promise;
      }
      return Response.json({
        id: "chatcmpl-x",
        object: "chat.completion",
        created: 1,
        model: "m",
        choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 1000, total_tokens: 1010 },
      });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    first: first.promise,
    release: () => release.resolve(),
    async stop() {
      release.resolve();
      ac.abort();
      await server.finished;
    },
  };
}

/**
 * Sends a request of n=10, max_tokens=100 (1,000 output tokens at most) and, while the upstream holds it,
 * a second of `second`'s choices; returns the second's status and error code.
 */
async function secondWhileFirstHeld(tokenRule: string, second: { n?: number }, price = "") {
  const up = heldUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.url}", api_key: "sk-x" }
models:
  chat-a:
    type: chat
    targets: [{ provider: up, model: m${price} }]
tokens:
  - { name: capped, sha256: ${hashToken(SECRET)}, models: ["*"], ${tokenRule} }
`);
  const ask = (body: Record<string, unknown>) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-a", messages: [{ role: "user", content: "hello" }], ...body }),
    });
  try {
    const first = ask({ max_tokens: 100, n: 10 });
    await up.first;
    const res = await ask({ max_tokens: 100, ...second });
    const body = await res.json();
    up.release();
    const held = await first;
    assert.equal(held.status, 200, await held.text());
    return { status: res.status, code: body.error?.code ?? null };
  } finally {
    await gw.stop();
    await up.stop();
  }
}

Deno.test("n choices: a token budget reserves the output limit per choice, so a second request of n=10 does not fit", async () => {
  // 1,500 tokens: the first reserves its prompt + 10 × 100; the second's 1,000 more would pass the cap.
  const denied = await secondWhileFirstHeld("budget: { tokens: 1500, period: day }", { n: 10 });
  assert.deepEqual(denied, { status: 429, code: "insufficient_quota" });
  // One choice of 100 still fits beside it: the estimate is not inflated beyond n × max_tokens.
  const admitted = await secondWhileFirstHeld("budget: { tokens: 1500, period: day }", {});
  assert.deepEqual(admitted, { status: 200, code: null });
});

Deno.test("n choices: TPM charges the output limit per choice up front", async () => {
  const denied = await secondWhileFirstHeld("limits: { tpm: 1500 }", { n: 10 });
  assert.deepEqual(denied, { status: 429, code: "rate_limit_exceeded" });
});

Deno.test("n choices: a money budget reserves the output limit per choice at the dearest rate", async () => {
  // $1 per million tokens either way: $0.0015 is the 1,500 tokens of the token budget's case.
  const price = ", price: { input: 1, output: 1 }";
  const denied = await secondWhileFirstHeld("budget: { cost: 0.0015, period: day }", { n: 10 }, price);
  assert.deepEqual(denied, { status: 429, code: "insufficient_quota" });
  const admitted = await secondWhileFirstHeld("budget: { cost: 0.0015, period: day }", {}, price);
  assert.deepEqual(admitted, { status: 200, code: null });
});
