/**
 * An OpenAI-compatible upstream that answers a non-streamed request with HTTP 200 and an `{"error": …}` body
 * (OpenRouter, once the model has started): the client gets the upstream's status and words, as for the same
 * error sent as an event in a 200 stream, and routing retries it and falls back to the alias's next target as
 * it would an HTTP 429, instead of a generic 502 "without valid choices". A stream request answered so (a 200
 * `application/json` body in place of the event stream), of an `openai` or `azure` upstream, likewise, instead of
 * a 502 "ended the stream before it was complete".
 */
import assert from "node:assert/strict";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import {
  assertRecordedRateLimited,
  assertRefused,
  assertStreamServed,
  chatStream,
  withUpstreamGateway,
} from "../helpers/json_error_in_200.ts";
import { jsonStep, type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

/** OpenRouter's 200 JSON body, after the blank lines it keeps the connection open with. */
const json = (body: unknown): RawStep => jsonStep(body, { lead: "\n\n" });
const RATE_LIMITED = json({
  error: { code: 429, message: "Rate limit exceeded: free-models-per-min", metadata: { provider_name: "x" } },
});
const ANSWER = json({
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "m-second",
  choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "Hi" } }],
});

Deno.test("a 200 with an error body is the upstream's 429, retried, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  or: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-one: { type: chat, targets: [ { provider: or, model: m-first, retries: 1 } ] }
  chat-two: { type: chat, targets: [ { provider: or, model: m-first, retries: 0 }, { provider: or, model: m-second } ] }
${TEST_TOKENS_YAML}`);
  upstream.stepFor = (request) => request.body.includes('"m-first"') ? RATE_LIMITED : ANSWER;
  const post = (model: string) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
    });
  try {
    const limited = await post("chat-one");
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get("x-gateway-attempts"), "2");
    const body = await limited.json();
    assert.equal(body.error.message, "Rate limit exceeded: free-models-per-min");
    assert.equal(body.error.type, "rate_limit_error");
    assert.equal(body.error.code, "rate_limit_exceeded");

    const served = await post("chat-two");
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("x-gateway-model"), "m-second");
    assert.equal((await served.json()).choices[0].message.content, "Hi");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

Deno.test("embeddings: a 200 with an error body is the upstream's 429 in its words (key scrubbed), retried, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  or: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-e-one: { type: embedding, targets: [ { provider: or, model: e-first, retries: 1 } ] }
  chat-e-two: { type: embedding, targets: [ { provider: or, model: e-first, retries: 0 }, { provider: or, model: e-second } ] }
${TEST_TOKENS_YAML}`);
  const limited = json({ error: { code: 429, message: `Rate limit exceeded for key ${FAKE_KEY}` } });
  const vectors = json({
    object: "list",
    model: "e-second",
    data: [{ object: "embedding", index: 0, embedding: [0.5, 0.25] }],
    usage: { prompt_tokens: 1, total_tokens: 1 },
  });
  upstream.stepFor = (request) => request.body.includes('"e-first"') ? limited : vectors;
  const post = (model: string) =>
    fetch(`${gw.baseURL}/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "hi" }),
    });
  try {
    const res = await post("chat-e-one");
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("x-gateway-attempts"), "2");
    const body = await res.json();
    assert.match(body.error.message, /^Rate limit exceeded for key/);
    assert(!JSON.stringify(body).includes(FAKE_KEY), JSON.stringify(body));
    assert.equal(body.error.type, "rate_limit_error");
    assert.equal(body.error.code, "rate_limit_exceeded");

    const served = await post("chat-e-two");
    assert.equal(served.status, 200);
    assert.deepEqual((await served.json()).data[0].embedding, [0.5, 0.25]);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

/** A chat completion stream in OpenAI's SSE, from `model`, saying "Hi". */
const SSE_ANSWER: RawStep = {
  status: 200,
  headers: { "content-type": "text/event-stream" },
  chunks: [
    `data: ${
      JSON.stringify({
        id: "chatcmpl-2",
        object: "chat.completion.chunk",
        created: 1,
        model: "m-second",
        choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }],
      })
    }\n\n`,
    `data: ${
      JSON.stringify({
        id: "chatcmpl-2",
        object: "chat.completion.chunk",
        created: 1,
        model: "m-second",
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
      })
    }\n\ndata: [DONE]\n\n`,
  ],
};

for (const type of ["openai", "azure"]) {
  Deno.test(`${type}: a stream answered with a 200 JSON error body is the upstream's 429, retried, recorded, then served by the next target`, () =>
    withUpstreamGateway(
      (url) => `
providers:
  up: { type: ${type}, base_url: "${
        type === "azure" ? `${url}/openai/v1` : `${url}/v1`
      }", api_key: "${FAKE_KEY}" }
models:
  chat-one: { type: chat, targets: [ { provider: up, model: m-first, retries: 1 } ] }
  chat-two: { type: chat, targets: [ { provider: up, model: m-first, retries: 0 }, { provider: up, model: m-second } ] }
  chat-odd: { type: chat, targets: [ { provider: up, model: m-odd, retries: 0 } ] }`,
      (request) =>
        request.body.includes('"m-first"')
          ? RATE_LIMITED
          : request.body.includes('"m-odd"')
          ? ANSWER
          : SSE_ANSWER,
      async (gw) => {
        // Nothing was sent yet: the client gets the HTTP error and its JSON body, as for an HTTP 429.
        const limited = await assertRefused(await chatStream(gw, "chat-one"), { key: FAKE_KEY });
        assert.equal(limited.error.message, "Rate limit exceeded: free-models-per-min");
        assert.equal(limited.error.code, "rate_limit_exceeded");
        await assertRecordedRateLimited(gw, 1);

        const served = await assertStreamServed(await chatStream(gw, "chat-two"), "m-second");
        assert.match(served, /"content":"Hi"/);
        assert.match(served, /data: \[DONE\]/);

        // A JSON body that is not an error is still no stream: the 502 it was before.
        const odd = await chatStream(gw, "chat-odd");
        const oddBody = await odd.json();
        assert.equal(odd.status, 502, JSON.stringify(oddBody));
        assert.match(oddBody.error.message, /ended the stream before it was complete/);
      },
    ));
}
