/**
 * A provider adapter refuses what its vendor cannot do while the request is in the chat form; a Responses
 * client must still be told its own field: `reasoning.effort`, not `reasoning_effort`; `input[0].content[1]
 * .image_url`, not `messages[1].content[1].image_url.url`. End to end with the official `openai` SDK against
 * the fake Gemini and Bedrock vendors, refusals that hold whatever the adapters learn to translate next.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { FAKE_AWS, FAKE_REGION, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

/** Runs `fn` with an SDK client on a gateway in front of the fake Gemini and Bedrock vendors. */
async function withVendors(
  fn: (client: OpenAI, upstreamCalls: () => number) => Promise<void>,
): Promise<void> {
  const gemini = startFakeGemini();
  const bedrock = startFakeBedrock();
  const gw = await startGateway(`
providers:
  gem: { type: gemini, base_url: "${gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  bed:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-gemini: { type: chat, targets: [ { provider: gem, model: gem-ok } ] }
  chat-bedrock: { type: chat, targets: [ { provider: bed, model: "us.plain-model-v1:0" } ] }
${TEST_TOKENS_YAML}`);
  try {
    await fn(
      new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 }),
      () => gemini.requests.length + bedrock.requests.length,
    );
  } finally {
    await gw.stop();
    await gemini.stop();
    await bedrock.stop();
  }
}

/** The SDK's error for a request the gateway must refuse. */
async function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.BadRequestError>> {
  const err = await promise.then(() => undefined, (e) => e);
  assert.ok(err instanceof OpenAI.BadRequestError, `expected a 400, got ${err}`);
  return err;
}

Deno.test("responses client terms: a reasoning effort the vendor refuses names reasoning.effort", async () => {
  await withVendors(async (client, upstreamCalls) => {
    // Gemini has no `minimal` thinking budget; Converse has no effort at all for a model that is not Claude.
    for (const model of ["chat-gemini", "chat-bedrock"]) {
      const err = await refusal(
        client.responses.create({ model, input: "Hi", reasoning: { effort: "minimal" } }),
      );
      assert.equal(err.param, "reasoning.effort", model);
      assert.equal(err.code, "unsupported_parameter");
      assert.match(err.message, /'reasoning\.effort'/, "the message names the client's field");
      assert.doesNotMatch(err.message, /reasoning_effort/);
    }
    assert.equal(upstreamCalls(), 0, "refused before any upstream call");
  });
});

Deno.test("responses client terms: a refused part of a message names the input item's part", async () => {
  await withVendors(async (client) => {
    // Gemini takes base64 data URLs only; the URL is the input_image part's own `image_url`.
    const err = await refusal(client.responses.create({
      model: "chat-gemini",
      instructions: "Be brief.",
      input: [{
        role: "user",
        content: [
          { type: "input_text", text: "What is this?" },
          { type: "input_image", image_url: "data:image/png,not-base64", detail: "auto" },
        ],
      }],
    }));
    assert.equal(err.param, "input[0].content[1].image_url");
  });
});
