/**
 * A Gemini upstream (a proxy in Google's format) that answers a non-streamed request with HTTP 200 and Google's
 * error body `{"error": {"code", "message", "status"}}` in place of the answer: the client gets the upstream's
 * status and words (the key scrubbed) in Google's error shape, routing retries it and falls back to the model's
 * next target as it would the HTTP 429, and the usage record says the request failed — for generateContent passed
 * through, embedContent, and a chat completion translated to Gemini — instead of a generic 502 "something other
 * than a GenerateContentResponse" or "malformed embeddings" (as for OpenAI's format: tests/chat/json_error_in_200_test.ts).
 * A stream request answered with such a JSON body in place of its event stream likewise (passed through and
 * translated), instead of a 502 "ended the stream before it was complete".
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import {
  assertRecordedRateLimited,
  assertRefused,
  assertStreamServed,
  chatStream,
  withUpstreamGateway,
} from "../helpers/json_error_in_200.ts";
import { dataEvents, jsonStep, type RawStep, sseStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { usageRows } from "../helpers/usage_rows.ts";

const KEY = "AIzaSyFAKE-gemini-200-key-0123456789";
/** Google's 200 JSON body, in its content type. */
const json = (body: unknown): RawStep => jsonStep(body, { contentType: "application/json; charset=UTF-8" });
const EXHAUSTED = json({
  error: { code: 429, message: `Resource has been exhausted (key ${KEY}).`, status: "RESOURCE_EXHAUSTED" },
});
/** A GenerateContentResponse from `g-second` saying "Hi". */
const GENERATED = {
  candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, finishReason: "STOP", index: 0 }],
  usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
  modelVersion: "g-second",
};
const ANSWER = json(GENERATED);
const EMBEDDING = json({ embedding: { values: [0.5, 0.25] } });

Deno.test("gemini: a 200 with Google's error body is the upstream's 429 in Google's shape, retried, recorded as failed, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  gem: { type: gemini, base_url: "${upstream.url}/v1beta", api_key: "${KEY}" }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-g-one: { type: chat, targets: [ { provider: gem, model: g-first, retries: 1 } ] }
  chat-g-two: { type: chat, targets: [ { provider: gem, model: g-first, retries: 0 }, { provider: gem, model: g-second } ] }
  chat-e-one: { type: embedding, targets: [ { provider: gem, model: e-first, retries: 0 } ] }
  chat-e-two: { type: embedding, targets: [ { provider: gem, model: e-first, retries: 0 }, { provider: gem, model: e-second } ] }
${TEST_TOKENS_YAML}`);
  upstream.stepFor = (request) =>
    request.path.includes("-first:")
      ? EXHAUSTED
      : request.path.includes(":embedContent")
      ? EMBEDDING
      : ANSWER;
  const headers = { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" };
  const generate = (model: string) =>
    fetch(`${gw.url}/v1beta/models/${model}:generateContent`, {
      method: "POST",
      headers,
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
  const embed = (model: string) =>
    fetch(`${gw.url}/v1beta/models/${model}:embedContent`, {
      method: "POST",
      headers,
      body: JSON.stringify({ content: { parts: [{ text: "hi" }] } }),
    });
  const limitedIn = async (res: Response, attempts: string) => {
    const body = await res.json();
    assert.equal(res.status, 429, JSON.stringify(body));
    assert.equal(res.headers.get("x-gateway-attempts"), attempts);
    assert.equal(body.error.code, 429);
    assert.equal(body.error.status, "RESOURCE_EXHAUSTED");
    assert.match(body.error.message, /^Resource has been exhausted \(key /);
    assert(!JSON.stringify(body).includes(KEY), JSON.stringify(body));
  };
  try {
    await limitedIn(await generate("chat-g-one"), "2");
    assert(
      upstream.requests.every((r) => r.path === "/v1beta/models/g-first:generateContent"),
      "passed through",
    );
    await limitedIn(await embed("chat-e-one"), "1");
    const rows = await usageRows<{ status: number; error_code: string | null }>(gw, 2);
    assert.deepEqual(rows.map((r) => [r.status, r.error_code]), [[429, "rate_limit_exceeded"], [
      429,
      "rate_limit_exceeded",
    ]]);

    const served = await generate("chat-g-two");
    const answer = await served.json();
    assert.equal(served.status, 200, JSON.stringify(answer));
    assert.equal(served.headers.get("x-gateway-model"), "g-second");
    assert.equal(answer.candidates[0].content.parts[0].text, "Hi");
    const vectors = await embed("chat-e-two");
    assert.equal(vectors.status, 200);
    assert.deepEqual((await vectors.json()).embedding.values, [0.5, 0.25]);

    // A chat completion translated to the same upstream reads its answer by the same rule.
    const chat = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-g-one", messages: [{ role: "user", content: "hi" }] }),
    });
    const chatBody = await chat.json();
    assert.equal(chat.status, 429, JSON.stringify(chatBody));
    assert.equal(chatBody.error.code, "rate_limit_exceeded");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

Deno.test("gemini stream, native and translated: a 200 JSON error body is the upstream's 429 in Google's shape, retried, recorded as failed, then served by the next target", () =>
  withUpstreamGateway(
    (url) => `
providers:
  gem: { type: gemini, base_url: "${url}/v1beta", api_key: "${KEY}" }
models:
  chat-g-one: { type: chat, targets: [ { provider: gem, model: g-first, retries: 1 } ] }
  chat-g-two: { type: chat, targets: [ { provider: gem, model: g-first, retries: 0 }, { provider: gem, model: g-second } ] }`,
    (request) => request.path.includes("-first:") ? EXHAUSTED : sseStep(dataEvents([GENERATED])),
    async (gw) => {
      // Nothing was sent yet: the HTTP error and Google's error body, as for an HTTP 429.
      const limited = await assertRefused(await generateStream(gw, "chat-g-one"), { key: KEY });
      assert.equal(limited.error.status, "RESOURCE_EXHAUSTED");
      await assertRecordedRateLimited(gw, 1);

      const served = await assertStreamServed(await generateStream(gw, "chat-g-two"), "g-second");
      assert.match(served, /"text":"Hi"/);

      // A chat completion stream translated to the same upstream.
      const chat = await assertRefused(await chatStream(gw, "chat-g-one"), { key: KEY });
      assert.equal(chat.error.code, "rate_limit_exceeded");
    },
  ));

/** A Gemini streamGenerateContent request (SSE) for `model`. */
function generateStream(gw: TestGateway, model: string): Promise<Response> {
  return fetch(`${gw.url}/v1beta/models/${model}:streamGenerateContent?alt=sse`, {
    method: "POST",
    headers: { "x-goog-api-key": TEST_TOKEN, "content-type": "application/json" },
    body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
  });
}
