/**
 * An embeddings request split into several upstream calls (Bedrock Titan: one text per call; Gemini: batches of
 * 100; Google's `:batchEmbedContents` asking for several `outputDimensionality`: one call each) whose later call
 * fails with what routing retries (429, 5xx): the calls that had answered were billed by the vendor, so the
 * request's one usage record counts their tokens and cost too, beside the answering attempt's — and, when no
 * attempt answers, the failed request's record still shows them. In-process over a raw upstream.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";
import { type RawRequest, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { countTokens } from "../../lib/usage/estimate.ts";

const TITAN = "amazon.titan-embed-text-v2:0";

function configFor(url: string): string {
  const bedrock = (name: string) => `
  ${name}:
    type: bedrock
    region: us-east-1
    base_url: "${url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms, eject_after: 1000 }
providers:
  oai: { type: openai, base_url: "${url}/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  gem: { type: gemini, base_url: "${url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }${
    bedrock("br")
  }${bedrock("br2")}
models:
  e-titan: { type: embedding, targets: [{ provider: br, model: "${TITAN}", retries: 1 }] }
  e-titan-fallback:
    type: embedding
    targets:
      - { provider: br, model: "${TITAN}", retries: 0, price: { input: 1, output: 0 } }
      - { provider: br2, model: "${TITAN}", retries: 0, price: { input: 3, output: 0 } }
  e-gem: { type: embedding, targets: [{ provider: gem, model: text-embedding-004, retries: 1 }] }
  e-oai: { type: embedding, targets: [{ provider: oai, model: m, retries: 1 }] }
  chat-unused: { type: chat, targets: [{ provider: oai, model: m }] }
${TEST_TOKENS_YAML}`;
}

const json = (body: unknown, status = 200): RawStep => ({
  status,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(body)],
});
const THROTTLED: RawStep = {
  status: 429,
  headers: { "content-type": "application/json", "x-amzn-errortype": "ThrottlingException" },
  chunks: [`{"message":"Too many requests, please wait before trying again."}`],
};
const TITAN_OK = json({ embedding: [0.1, 0.2], inputTextTokenCount: 5 });

/** A raw upstream answering its `n`th request (from 1) with `step(n, request)`. */
function upstreamWith(step: (n: number, request: RawRequest) => RawStep) {
  const up = startRawUpstream();
  let n = 0;
  up.stepFor = (request) => step(++n, request);
  return up;
}

function embed(gw: ReturnType<typeof inProcessGateway>, model: string, input: string[]) {
  return gw.fetch("/v1/embeddings", {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input, encoding_format: "float" }),
  });
}

Deno.test("titan: calls answered before a retried 429 are in the record, retried or failed", async (t) => {
  await t.step("the retry answers: 5+5 billed before it, 15 by it", async () => {
    // The first call answers well after the third's 429 (and after a retry could have answered): the attempt
    // waits for the calls in flight, whose tokens the vendor bills.
    const late = new Promise((resolve) => setTimeout(resolve, 250));
    const up = upstreamWith((n) =>
      n === 3 ? THROTTLED : n === 1 ? { ...TITAN_OK, hold: { at: 0, open: late } } : TITAN_OK
    );
    try {
      const gw = inProcessGateway(configFor(up.url));
      const res = await embed(gw, "e-titan", ["a", "b", "c"]);
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      assert.equal(up.requests.length, 6);
      // The answer shows what embedding its inputs took; the record, everything the vendor billed.
      assert.equal(body.usage.prompt_tokens, 15);
      assert.equal(gw.records.length, 1);
      assert.equal(gw.records[0].attempts, 2);
      assert.equal(gw.records[0].prompt_tokens, 25);
      assert.equal(gw.records[0].tokens_estimated, false);
    } finally {
      await up.stop();
    }
  });
  await t.step("every attempt fails: the failed request's record keeps 5+5 from each", async () => {
    const up = upstreamWith((n) => n % 3 === 0 ? THROTTLED : TITAN_OK);
    try {
      const gw = inProcessGateway(configFor(up.url));
      const res = await embed(gw, "e-titan", ["a", "b", "c"]);
      await res.body?.cancel();
      assert.equal(res.status, 429);
      assert.equal(gw.records.length, 1);
      assert.equal(gw.records[0].status, 429);
      assert.equal(gw.records[0].prompt_tokens, 20);
    } finally {
      await up.stop();
    }
  });
  await t.step("a fallback target: each attempt's tokens cost its own target's price", async () => {
    const up = upstreamWith((n) => n === 3 ? THROTTLED : TITAN_OK);
    try {
      const gw = inProcessGateway(configFor(up.url));
      const res = await embed(gw, "e-titan-fallback", ["a", "b", "c"]);
      await res.body?.cancel();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-gateway-provider"), "br2");
      const record = gw.records[0];
      assert.equal(record.prompt_tokens, 25);
      // 10 tokens on br at 1 per million, 15 on br2 at 3 per million.
      assert.ok(Math.abs(record.cost - 55e-6) < 1e-12, `cost ${record.cost}`);
      assert.ok(Math.abs((record.cost_input ?? 0) - 55e-6) < 1e-12, `cost_input ${record.cost_input}`);
    } finally {
      await up.stop();
    }
  });
});

/** Gemini's `batchEmbedContents` answer to `request`, reporting `tokens(texts)` when given. */
function geminiBatch(request: RawRequest, tokens?: (count: number) => number): RawStep {
  const count = (JSON.parse(request.body) as { requests: unknown[] }).requests.length;
  const embeddings = Array.from({ length: count }, () => ({ values: [0.1, 0.2] }));
  return json(tokens ? { embeddings, usageMetadata: { promptTokenCount: tokens(count) } } : { embeddings });
}

Deno.test("gemini: a batch answered before the next one's 503 is in the record, reported or counted", async (t) => {
  const texts = Array.from({ length: 150 }, (_, i) => `text number ${i}`);
  await t.step("reported counts: 100 before the retry, 150 by it", async () => {
    const up = upstreamWith((n, request) =>
      n === 2 ? json({ error: { code: 503 } }, 503) : geminiBatch(request, (c) => c)
    );
    try {
      const gw = inProcessGateway(configFor(up.url));
      const res = await embed(gw, "e-gem", texts);
      await res.body?.cancel();
      assert.equal(res.status, 200);
      assert.equal(up.requests.length, 4);
      assert.equal(gw.records[0].prompt_tokens, 250);
      assert.equal(gw.records[0].tokens_estimated, false);
    } finally {
      await up.stop();
    }
  });
  await t.step("no counts reported: the gateway counts the first attempt's batch too", async () => {
    const up = upstreamWith((n, request) =>
      n === 2 ? json({ error: { code: 503 } }, 503) : geminiBatch(request)
    );
    try {
      const gw = inProcessGateway(configFor(up.url));
      const res = await embed(gw, "e-gem", texts);
      await res.body?.cancel();
      assert.equal(res.status, 200);
      const expected = (await countTokens(texts.slice(0, 100))) + (await countTokens(texts));
      assert.equal(gw.records[0].prompt_tokens, expected);
      assert.equal(gw.records[0].tokens_estimated, true);
    } finally {
      await up.stop();
    }
  });
});

Deno.test("gemini batchEmbedContents: a dimensionality's call answered before another's 500 is in the record", async () => {
  const openai = (tokens: number) =>
    json({
      object: "list",
      data: [{ object: "embedding", index: 0, embedding: [0.1, 0.2] }],
      model: "m",
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
  const up = upstreamWith((n) => n === 2 ? json({ error: { message: "boom" } }, 500) : openai(4));
  try {
    const gw = inProcessGateway(configFor(up.url));
    const res = await gw.fetch("/v1beta/models/e-oai:batchEmbedContents", {
      method: "POST",
      headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        requests: [
          { content: { parts: [{ text: "a" }] }, outputDimensionality: 256 },
          { content: { parts: [{ text: "b" }] }, outputDimensionality: 512 },
        ],
      }),
    });
    await res.body?.cancel();
    assert.equal(res.status, 200);
    assert.equal(up.requests.length, 4);
    assert.equal(gw.records.length, 1);
    assert.equal(gw.records[0].prompt_tokens, 12);
  } finally {
    await up.stop();
  }
});
