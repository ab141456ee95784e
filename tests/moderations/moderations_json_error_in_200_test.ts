/**
 * An OpenAI-compatible upstream (OpenRouter, LiteLLM) that answers `POST /v1/moderations` with HTTP 200 and an
 * `{"error": …}` body: the client gets the upstream's status in its words (its key scrubbed), and routing retries
 * it and falls back to the alias's next target as it would an HTTP 429, as for chat, embeddings and Responses
 * (tests/chat/json_error_in_200_test.ts), instead of a generic 502 "malformed moderation answer".
 */
import assert from "node:assert/strict";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

const json = (body: unknown): RawStep => ({
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(body)],
});
const RESULT = {
  flagged: false,
  categories: { violence: false },
  category_scores: { violence: 0.01 },
};

Deno.test("moderations: a 200 with an error body is the upstream's 429 in its words (key scrubbed), retried, then served by the next target", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  or: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
routing: { backoff_base: 5ms, backoff_max: 10ms }
models:
  chat-mod-one: { type: moderation, targets: [ { provider: or, model: mod-first, retries: 1 } ] }
  chat-mod-two: { type: moderation, targets: [ { provider: or, model: mod-first, retries: 0 }, { provider: or, model: mod-second } ] }
${TEST_TOKENS_YAML}`);
  const limited = json({
    error: { code: 429, message: `Rate limit exceeded: free-models-per-min (key ${FAKE_KEY})` },
  });
  const answer = json({ id: "modr-1", model: "mod-second", results: [RESULT] });
  upstream.stepFor = (request) => request.body.includes('"mod-first"') ? limited : answer;
  const post = (model: string) =>
    fetch(`${gw.baseURL}/moderations`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "hi" }),
    });
  try {
    const res = await post("chat-mod-one");
    const body = await res.json();
    assert.equal(res.status, 429, JSON.stringify(body));
    assert.equal(res.headers.get("x-gateway-attempts"), "2");
    assert.match(body.error.message, /^Rate limit exceeded: free-models-per-min \(key /);
    assert(!JSON.stringify(body).includes(FAKE_KEY), JSON.stringify(body));
    assert.equal(body.error.type, "rate_limit_error");
    assert.equal(body.error.code, "rate_limit_exceeded");

    const served = await post("chat-mod-two");
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("x-gateway-model"), "mod-second");
    assert.deepEqual((await served.json()).results, [RESULT]);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});

Deno.test("moderations: a 200 error body naming no status is a 502 in the upstream's words; a body with results is the answer", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  or: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
models:
  chat-mod-one: { type: moderation, targets: [ { provider: or, model: mod-first, retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  const post = () =>
    fetch(`${gw.baseURL}/moderations`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-mod-one", input: "hi" }),
    });
  try {
    upstream.next = json({ error: { message: "The moderation backend is down." } });
    const failed = await post();
    assert.equal(failed.status, 502);
    assert.equal((await failed.json()).error.message, "The moderation backend is down.");

    // The answer's fields make it the answer, whatever else it carries.
    upstream.next = json({ id: "modr-2", results: [RESULT], error: { message: "a warning" } });
    const served = await post();
    assert.equal(served.status, 200);
    assert.deepEqual((await served.json()).results, [RESULT]);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});
