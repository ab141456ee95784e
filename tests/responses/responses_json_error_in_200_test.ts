/**
 * A native Responses upstream (`native_responses: true`) that answers a non-streamed request with HTTP 200 and an
 * `{"error": …}` body in place of a Response (as OpenRouter does once the model has started): the client gets
 * the upstream's status and words (its key scrubbed), and routing retries it and falls back to the alias's next
 * target as it would the HTTP 429, as for chat (tests/chat/json_error_in_200_test.ts), instead of a generic 502
 * "something other than a Response object".
 * A stream request answered with such a JSON body in place of its event stream likewise (passed through and
 * translated), instead of a 502 "ended the stream before it was complete".
 */
import assert from "node:assert/strict";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import {
  assertRecordedRateLimited,
  assertRefused,
  withUpstreamGateway,
} from "../helpers/json_error_in_200.ts";
import { jsonStep as json, startRawUpstream } from "../helpers/raw_upstream.ts";
import { usageRows } from "../helpers/usage_rows.ts";

const RATE_LIMITED = json({ error: { code: 429, message: `Rate limit exceeded for key ${FAKE_KEY}` } });
const ANSWER = json({
  id: "resp_up_1",
  object: "response",
  created_at: 1,
  status: "completed",
  error: null,
  model: "r-second",
  output: [{
    type: "message",
    id: "msg_1",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "Hi", annotations: [] }],
  }],
  usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
});

Deno.test("native responses: a 200 with an error body is the upstream's 429, retried, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  or: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}", native_responses: true }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-r-one: { type: chat, targets: [ { provider: or, model: r-first, retries: 1 } ] }
  chat-r-two: { type: chat, targets: [ { provider: or, model: r-first, retries: 0 }, { provider: or, model: r-second } ] }
${TEST_TOKENS_YAML}`);
  upstream.stepFor = (request) => request.body.includes('"r-first"') ? RATE_LIMITED : ANSWER;
  const post = (model: string) =>
    fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "hi", store: false }),
    });
  try {
    const limited = await post("chat-r-one");
    const body = await limited.json();
    assert.equal(limited.status, 429, JSON.stringify(body));
    assert.equal(limited.headers.get("x-gateway-attempts"), "2");
    assert.match(body.error.message, /^Rate limit exceeded for key/);
    assert(!JSON.stringify(body).includes(FAKE_KEY), JSON.stringify(body));
    assert.equal(body.error.type, "rate_limit_error");
    assert.equal(body.error.code, "rate_limit_exceeded");
    assert(upstream.requests.every((r) => r.path === "/v1/responses"), "the native endpoint was asked");

    const served = await post("chat-r-two");
    const answer = await served.json();
    assert.equal(served.status, 200, JSON.stringify(answer));
    assert.equal(served.headers.get("x-gateway-model"), "r-second");
    assert.equal(answer.output[0].content[0].text, "Hi");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

Deno.test("native responses compact: a 200 with an error body is the upstream's 429 (key scrubbed), retried, recorded as failed, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  or: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}", native_responses: true }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-c-one: { type: chat, targets: [ { provider: or, model: c-first, retries: 1 } ] }
  chat-c-two: { type: chat, targets: [ { provider: or, model: c-first, retries: 0 }, { provider: or, model: c-second } ] }
${TEST_TOKENS_YAML}`);
  const compaction = json({
    id: "resp_cmp_1",
    object: "response.compaction",
    created_at: 1,
    output: [{ type: "compaction", id: "cmp_1", encrypted_content: "opaque" }],
    usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
  });
  upstream.stepFor = (request) => request.body.includes('"c-first"') ? RATE_LIMITED : compaction;
  const post = (model: string) =>
    fetch(`${gw.baseURL}/responses/compact`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "hi" }),
    });
  try {
    const limited = await post("chat-c-one");
    const body = await limited.json();
    assert.equal(limited.status, 429, JSON.stringify(body));
    assert.equal(limited.headers.get("x-gateway-attempts"), "2");
    assert.match(body.error.message, /^Rate limit exceeded for key/);
    assert(!JSON.stringify(body).includes(FAKE_KEY), JSON.stringify(body));
    assert.equal(body.error.type, "rate_limit_error");
    assert.equal(body.error.code, "rate_limit_exceeded");
    assert(
      upstream.requests.every((r) => r.path === "/v1/responses/compact"),
      "the native endpoint was asked",
    );
    const rows = await usageRows<{ status: number; error_code: string | null }>(gw, 1);
    assert.deepEqual(rows.map((r) => [r.status, r.error_code]), [[429, "rate_limit_exceeded"]]);

    const served = await post("chat-c-two");
    const answer = await served.json();
    assert.equal(served.status, 200, JSON.stringify(answer));
    assert.equal(served.headers.get("x-gateway-model"), "c-second");
    assert.equal(answer.object, "response.compaction");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

Deno.test("responses stream, native and translated: a 200 JSON error body is the upstream's 429 (key scrubbed), retried, recorded as failed", () =>
  withUpstreamGateway(
    (url) => `
providers:
  or: { type: openai, base_url: "${url}/v1", api_key: "${FAKE_KEY}", native_responses: true }
  plain: { type: openai, base_url: "${url}/v1", api_key: "${FAKE_KEY}" }
models:
  chat-native: { type: chat, targets: [ { provider: or, model: r-first, retries: 1 } ] }
  chat-translated: { type: chat, targets: [ { provider: plain, model: r-first, retries: 1 } ] }`,
    () => RATE_LIMITED,
    async (gw, upstream) => {
      for (
        const [model, path] of [["chat-native", "/v1/responses"], ["chat-translated", "/v1/chat/completions"]]
      ) {
        const asked = upstream.requests.length;
        // Nothing was sent yet: the HTTP error and its JSON body, as for an HTTP 429.
        const limited = await assertRefused(await responsesStream(gw, model), { key: FAKE_KEY });
        assert.match(limited.error.message, /^Rate limit exceeded for key/);
        assert.equal(limited.error.code, "rate_limit_exceeded");
        assert(upstream.requests.slice(asked).every((r) => r.path === path), `${model} asked ${path}`);
      }
      await assertRecordedRateLimited(gw, 2);
    },
  ));

/** A Responses stream request for `model`. */
function responsesStream(gw: TestGateway, model: string): Promise<Response> {
  return fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "hi", store: false, stream: true }),
  });
}
