/**
 * An OpenAI-compatible upstream (OpenRouter, LiteLLM) that answers `POST /v1/moderations` with HTTP 200 and an
 * `{"error": …}` body: the client gets the upstream's status in its words (its key scrubbed), and routing retries
 * it and falls back to the alias's next target as it would an HTTP 429, as for chat, embeddings and Responses
 * (tests/chat/json_error_in_200_test.ts), instead of a generic 502 "malformed moderation answer".
 */
import assert from "node:assert/strict";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { assertRefused, withUpstreamGateway } from "../helpers/json_error_in_200.ts";
import { jsonStep as json, type RawStep } from "../helpers/raw_upstream.ts";

const RESULT = {
  flagged: false,
  categories: { violence: false },
  category_scores: { violence: 0.01 },
};

/** A moderation request for `model`. */
function moderate(gw: TestGateway, model: string): Promise<Response> {
  return fetch(`${gw.baseURL}/moderations`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model, input: "hi" }),
  });
}

const LIMITED = json({
  error: { code: 429, message: `Rate limit exceeded: free-models-per-min (key ${FAKE_KEY})` },
});
const ANSWER = json({ id: "modr-1", model: "mod-second", results: [RESULT] });

Deno.test("moderations: a 200 with an error body is the upstream's 429 in its words (key scrubbed), retried, then served by the next target", () =>
  withUpstreamGateway(
    (url) => `
providers:
  or: { type: openai, base_url: "${url}/v1", api_key: "${FAKE_KEY}" }
models:
  chat-mod-one: { type: moderation, targets: [ { provider: or, model: mod-first, retries: 1 } ] }
  chat-mod-two: { type: moderation, targets: [ { provider: or, model: mod-first, retries: 0 }, { provider: or, model: mod-second } ] }`,
    (request) => request.body.includes('"mod-first"') ? LIMITED : ANSWER,
    async (gw) => {
      const body = await assertRefused(await moderate(gw, "chat-mod-one"), { key: FAKE_KEY });
      assert.match(body.error.message, /^Rate limit exceeded: free-models-per-min \(key /);
      assert.equal(body.error.type, "rate_limit_error");
      assert.equal(body.error.code, "rate_limit_exceeded");

      const served = await moderate(gw, "chat-mod-two");
      assert.equal(served.status, 200);
      assert.equal(served.headers.get("x-gateway-model"), "mod-second");
      assert.deepEqual((await served.json()).results, [RESULT]);
    },
  ));

Deno.test("moderations: a 200 error body naming no status is a 502 in the upstream's words; a body with results is the answer", () => {
  let step: RawStep = json({ error: { message: "The moderation backend is down." } });
  return withUpstreamGateway(
    (url) => `
providers:
  or: { type: openai, base_url: "${url}/v1", api_key: "${FAKE_KEY}" }
models:
  chat-mod-one: { type: moderation, targets: [ { provider: or, model: mod-first, retries: 0 } ] }`,
    () => step,
    async (gw) => {
      const failed = await moderate(gw, "chat-mod-one");
      assert.equal(failed.status, 502);
      assert.equal((await failed.json()).error.message, "The moderation backend is down.");

      // The answer's fields make it the answer, whatever else it carries.
      step = json({ id: "modr-2", results: [RESULT], error: { message: "a warning" } });
      const served = await moderate(gw, "chat-mod-one");
      assert.equal(served.status, 200);
      assert.deepEqual((await served.json()).results, [RESULT]);
    },
  );
});
