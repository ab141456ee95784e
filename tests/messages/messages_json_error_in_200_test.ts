/**
 * An Anthropic upstream (a proxy in Anthropic's format) that answers a non-streamed Messages request with HTTP 200
 * and Anthropic's error body `{"type": "error", "error": {"type", "message"}}` in place of a Message: the client
 * gets the upstream's status and error type in Anthropic's shape (the key scrubbed), routing retries it and falls
 * back to the alias's next target as it would the HTTP 429, and the usage record says the request failed — passed
 * through, and for a chat completion translated to Anthropic — instead of a generic 502 "something other than a
 * Message" (as for OpenAI's format: tests/chat/json_error_in_200_test.ts).
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
import { jsonStep as json, sseStep, startRawUpstream, typedEvents } from "../helpers/raw_upstream.ts";
import { usageRows } from "../helpers/usage_rows.ts";

const KEY = "sk-ant-fake-200-key-0123456789abcdef";
const RATE_LIMITED = json({
  type: "error",
  error: { type: "rate_limit_error", message: `Number of requests has exceeded your rate limit (${KEY}).` },
});
const OVERLOADED = json({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
const MESSAGE = json({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "a-second",
  content: [{ type: "text", text: "Hi" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 1, output_tokens: 1 },
});

Deno.test("messages: a 200 with Anthropic's error body is the upstream's 429 in Anthropic's shape, retried, recorded as failed, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  ant: { type: anthropic, base_url: "${upstream.url}", api_key: "${KEY}" }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-a-one: { type: chat, targets: [ { provider: ant, model: a-first, retries: 1 } ] }
  chat-a-two: { type: chat, targets: [ { provider: ant, model: a-first, retries: 0 }, { provider: ant, model: a-second } ] }
  chat-a-busy: { type: chat, targets: [ { provider: ant, model: a-busy, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  upstream.stepFor = (request) =>
    request.body.includes('"a-first"')
      ? RATE_LIMITED
      : request.body.includes('"a-busy"')
      ? OVERLOADED
      : MESSAGE;
  const post = (model: string) =>
    fetch(`${gw.baseURL}/messages`, {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }] }),
    });
  try {
    const limited = await post("chat-a-one");
    const body = await limited.json();
    assert.equal(limited.status, 429, JSON.stringify(body));
    assert.equal(limited.headers.get("x-gateway-attempts"), "2");
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "rate_limit_error");
    assert.match(body.error.message, /^Number of requests has exceeded your rate limit/);
    assert(!JSON.stringify(body).includes(KEY), JSON.stringify(body));
    assert(upstream.requests.every((r) => r.path === "/v1/messages"), "passed through");
    const rows = await usageRows<{ status: number; error_code: string | null }>(gw, 1);
    assert.deepEqual(rows.map((r) => r.status), [429]);

    // An overload is Anthropic's overloaded_error, a 5xx the client's SDK retries.
    const busy = await post("chat-a-busy");
    const busyBody = await busy.json();
    assert.equal(busy.status, 529, JSON.stringify(busyBody));
    assert.equal(busyBody.error.type, "overloaded_error");

    const served = await post("chat-a-two");
    const answer = await served.json();
    assert.equal(served.status, 200, JSON.stringify(answer));
    assert.equal(served.headers.get("x-gateway-model"), "a-second");
    assert.equal(answer.content[0].text, "Hi");

    // A chat completion translated to the same upstream reads its answer by the same rule.
    const chat = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-a-one", messages: [{ role: "user", content: "hi" }] }),
    });
    const chatBody = await chat.json();
    assert.equal(chat.status, 429, JSON.stringify(chatBody));
    assert.equal(chatBody.error.type, "rate_limit_error");
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

/** Anthropic's stream of a Message from `a-second` saying "Hi". */
const SSE_MESSAGE = sseStep(typedEvents([
  {
    type: "message_start",
    message: {
      id: "msg_2",
      type: "message",
      role: "assistant",
      model: "a-second",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 0 },
    },
  },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } },
  { type: "content_block_stop", index: 0 },
  {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: 1 },
  },
  { type: "message_stop" },
]));

Deno.test("messages stream, native and translated: a 200 JSON error body is the upstream's 429, retried, recorded as failed, then served by the next target", () =>
  withUpstreamGateway(
    (url) => `
providers:
  ant: { type: anthropic, base_url: "${url}", api_key: "${KEY}" }
models:
  chat-a-one: { type: chat, targets: [ { provider: ant, model: a-first, retries: 1 } ] }
  chat-a-two: { type: chat, targets: [ { provider: ant, model: a-first, retries: 0 }, { provider: ant, model: a-second } ] }`,
    (request) => request.body.includes('"a-first"') ? RATE_LIMITED : SSE_MESSAGE,
    async (gw) => {
      // Nothing was sent yet: the HTTP error and Anthropic's error body, as for an HTTP 429.
      const limited = await assertRefused(await messagesStream(gw, "chat-a-one"), { key: KEY });
      assert.equal(limited.type, "error");
      assert.equal(limited.error.type, "rate_limit_error");
      await assertRecordedRateLimited(gw, 1, "rate_limit_error");

      const served = await assertStreamServed(await messagesStream(gw, "chat-a-two"), "a-second");
      assert.match(served, /"text":"Hi"[\s\S]*event: message_stop/);

      // A chat completion stream translated to the same upstream.
      const chat = await assertRefused(await chatStream(gw, "chat-a-one"), { key: KEY });
      assert.equal(chat.error.type, "rate_limit_error");
    },
  ));

/** A Messages stream request for `model`. */
function messagesStream(gw: TestGateway, model: string): Promise<Response> {
  return fetch(`${gw.baseURL}/messages`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({
      model,
      max_tokens: 16,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    }),
  });
}
