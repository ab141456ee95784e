/**
 * The spans of a cached alias's requests: a hit, exact or semantic, JSON or streamed, is a GenAI call like a
 * fresh answer (its `chat <alias>` span says what the cached answer said of itself), with no attempt under it;
 * and the semantic cache's own embedding call stays out of the request's GenAI span (which is the client's
 * `chat <alias>` call, with its attempt under it).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type DecodedSpan, type OtlpReceiver, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

async function withCache(
  fn: (gw: TestGateway, otlp: OtlpReceiver, upstream: ReturnType<typeof startFakeOpenAI>) => Promise<void>,
): Promise<void> {
  const otlp = startOtlpReceiver();
  const upstream = startFakeOpenAI();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
  capture_content: true
cache: { store: memory }
providers:
  up: { type: openai, base_url: "${upstream.baseURL}", api_key: "${FAKE_KEY}" }
models:
  exact: { type: chat, targets: [{ provider: up, model: gpt-4o-mini }], cache: { ttl: 10m } }
  similar:
    type: chat
    targets: [{ provider: up, model: gpt-4o-mini }]
    cache: { semantic: { embeddings: emb, threshold: 0.95 } }
  emb: { type: embedding, targets: [{ provider: up, model: text-embedding-3-small }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    await fn(gw, otlp, upstream);
  } finally {
    await gw.stop();
    await upstream.stop();
    await otlp.stop();
  }
}

/** Asks `model` under a trace of its own; the trace id and the answer's id as the client saw it. */
async function ask(
  gw: TestGateway,
  model: string,
  stream = false,
  question = "What is the capital of France?",
): Promise<{ traceId: string; id: string }> {
  const traceId = crypto.randomUUID().replaceAll("-", "");
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
    },
    body: JSON.stringify({
      model,
      stream,
      max_tokens: 50,
      messages: [{ role: "user", content: question }],
    }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const first = stream ? text.slice("data: ".length, text.indexOf("\n")) : text;
  return { traceId, id: JSON.parse(first).id };
}

/** The spans of a trace once its server span is in. */
async function traceOf(otlp: OtlpReceiver, traceId: string): Promise<DecodedSpan[]> {
  const spans = await otlp.waitForSpans(
    (s) => s.some((x) => x.traceId === traceId && x.kind === "SERVER"),
  );
  return spans.filter((s) => s.traceId === traceId);
}

Deno.test("telemetry cache: a semantic lookup's embedding call does not take the request's GenAI span", async () => {
  await withCache(async (gw, otlp, upstream) => {
    const { traceId } = await ask(gw, "similar");
    const spans = await traceOf(otlp, traceId);
    const calls = spans.filter((s) => s.attributes["gen_ai.operation.name"] !== undefined);
    assert.deepEqual(calls.map((s) => s.name), ["chat similar"], "the client's call, and only it");
    const call = calls[0];
    assert.equal(call.attributes["gen_ai.operation.name"], "chat");
    assert.equal(call.attributes["gen_ai.request.max_tokens"], 50);
    assert.equal(call.attributes["gen_ai.response.model"], "gpt-4o-mini");
    assert.deepEqual(call.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    const attempts = spans.filter((s) => s.name === "POST" && s.kind === "CLIENT");
    assert.equal(attempts.length, 1, "the chat's attempt; the lookup's own call is not the client's");
    assert.equal(attempts[0].parentSpanId, call.spanId);
    // The embedding request upstream is the gateway's, outside the client's trace.
    const embedding = upstream.requests.find((r) => r.path.endsWith("/embeddings"));
    assert.ok(embedding, "the semantic lookup embedded the question");
    assert.ok(!(embedding.headers.get("traceparent") ?? "").includes(traceId));
  });
});

Deno.test("telemetry cache: a hit has its GenAI span, saying what the cached answer said, and no attempt", async () => {
  await withCache(async (gw, otlp, upstream) => {
    await ask(gw, "exact");
    await ask(gw, "similar");
    const asked = upstream.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
    const hits = [
      { model: "exact", stream: false, cache: "hit" },
      { model: "exact", stream: true, cache: "hit" },
      { model: "similar", stream: false, cache: "hit_semantic", question: "And the capital of France?" },
    ];
    for (const hit of hits) {
      const { traceId, id } = await ask(gw, hit.model, hit.stream, hit.question);
      const spans = await traceOf(otlp, traceId);
      const what = `${hit.cache}, stream ${hit.stream}`;
      assert.equal(spans.find((s) => s.name === "gateway")?.attributes["gateway.cache"], hit.cache, what);
      const call = spans.find((s) => s.name === `chat ${hit.model}`);
      assert.ok(call, `a GenAI span (${what}) in ${spans.map((s) => s.name)}`);
      assert.equal(call.kind, "CLIENT");
      assert.equal(call.attributes["gen_ai.operation.name"], "chat");
      assert.equal(call.attributes["gen_ai.request.max_tokens"], 50);
      assert.equal(call.attributes["gen_ai.provider.name"], "openai");
      assert.equal(call.attributes["gen_ai.response.model"], "gpt-4o-mini");
      assert.equal(call.attributes["gen_ai.response.id"], id, `the id the client got (${what})`);
      assert.deepEqual(call.attributes["gen_ai.response.finish_reasons"], ["stop"]);
      const output = JSON.parse(String(call.attributes["gen_ai.output.messages"]));
      assert.equal(output[0].parts[0].content, "Hello from the fake upstream!");
      assert.equal(spans.filter((s) => s.name === "POST").length, 0, `no attempt (${what})`);
    }
    const after = upstream.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
    assert.equal(after, asked, "every one of them a hit");
  });
});
