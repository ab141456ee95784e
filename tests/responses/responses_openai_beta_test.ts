/**
 * The openai SDK's beta Responses (`client.beta.responses.create({betas: ['responses_multi_agent=v1'],
 * multi_agent})`) through the gateway. The SDK sends `POST /v1/responses?beta=true` with
 * `openai-beta: responses_multi_agent=v1`; the beta's body field means nothing to OpenAI without the opt-in, so a
 * native OpenAI target gets both as the client sent them (create, compact, input_tokens). A target that does not
 * take them (a translated one, Azure's Responses API) has its answer name each beta in `x-gateway-dropped` and the
 * usage record's `dropped`, as the Messages API names the `anthropic-beta` names a target goes without.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { fetchThrough, type InProcessGateway } from "../helpers/in_process.ts";
import { ANTHROPIC_OK, json } from "../helpers/mixed_vendors.ts";
import { type RawRequest, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const BETA = "responses_multi_agent=v1";
const MULTI_AGENT = { enabled: true, max_concurrent_subagents: 2 };

const RESPONSE = {
  id: "resp_up",
  object: "response",
  created_at: 1,
  status: "completed",
  model: "gpt-up",
  output: [{
    type: "message",
    id: "msg_1",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text: "hi", annotations: [] }],
  }],
  usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
};
const COMPACTION = {
  id: "cmp_up",
  object: "response.compaction",
  created_at: 1,
  output: [],
  usage: RESPONSE.usage,
};

function withGateway(fn: (gw: InProcessGateway, up: RawUpstream, sdk: OpenAI) => Promise<void>) {
  return withInProcessGateway(() => {
    const up = startRawUpstream();
    up.stepFor = (request) =>
      request.path.includes("/ant/")
        ? json(ANTHROPIC_OK)
        : request.path.includes("/responses/compact")
        ? json(COMPACTION)
        : request.path.includes("/responses/input_tokens")
        ? json({ object: "response.input_tokens", input_tokens: 7 })
        : json(RESPONSE);
    return {
      fakes: up,
      config: `
providers:
  oai: { type: openai, base_url: "${up.url}/oai/v1", api_key: "sk-upstream-key-abcdef0123456789", native_responses: true }
  az: { type: azure, base_url: "${up.url}/az/openai/v1", api_key: "azure-key-abcdef0123456789", native_responses: true }
  ant: { type: anthropic, base_url: "${up.url}/ant", api_key: "sk-ant-key-abcdef0123456789" }
models:
  chat-oai: { type: chat, targets: [ { provider: oai, model: gpt-up, retries: 0 } ] }
  chat-azure: { type: chat, targets: [ { provider: az, model: my-deployment, retries: 0 } ] }
  chat-claude: { type: chat, targets: [ { provider: ant, model: claude-sonnet-4-5, retries: 0 } ] }
${TEST_TOKENS_YAML}`,
    };
  }, (gw, up) => {
    const sdk = new OpenAI({
      apiKey: TEST_TOKEN,
      baseURL: "http://gateway.test/v1",
      maxRetries: 0,
      fetch: fetchThrough(gw),
    });
    return fn(gw, up, sdk);
  });
}

/** The one upstream request a call made. */
async function sent(up: RawUpstream, call: () => Promise<unknown>): Promise<RawRequest> {
  const before = up.requests.length;
  await call();
  assert.equal(up.requests.length, before + 1);
  return up.requests[before];
}

Deno.test("openai beta: a native OpenAI target gets the SDK's opt-in with the beta's fields (create, compact, count)", async () => {
  await withGateway(async (gw, up, sdk) => {
    const create = await sent(up, () =>
      sdk.beta.responses.create({
        model: "chat-oai",
        input: "hi",
        store: false,
        betas: [BETA],
        multi_agent: MULTI_AGENT,
      }));
    assert.equal(create.path, "/oai/v1/responses?beta=true");
    assert.equal(create.headers.get("openai-beta"), BETA);
    assert.deepEqual(JSON.parse(create.body).multi_agent, MULTI_AGENT);
    assert.equal(gw.records.at(-1)?.dropped ?? null, null);

    const compact = await sent(
      up,
      () => sdk.beta.responses.compact({ model: "chat-oai", input: "hi", betas: [BETA] }),
    );
    assert.equal(compact.path, "/oai/v1/responses/compact?beta=true");
    assert.equal(compact.headers.get("openai-beta"), BETA);

    const count = await sent(
      up,
      () => sdk.beta.responses.inputTokens.count({ model: "chat-oai", input: "hi", betas: [BETA] }),
    );
    assert.equal(count.path, "/oai/v1/responses/input_tokens?beta=true");
    assert.equal(count.headers.get("openai-beta"), BETA);
  });
});

Deno.test("openai beta: the plain SDK sends no opt-in, and none is added", async () => {
  await withGateway(async (_gw, up, sdk) => {
    const create = await sent(
      up,
      () => sdk.responses.create({ model: "chat-oai", input: "hi", store: false }),
    );
    assert.equal(create.path, "/oai/v1/responses");
    assert.equal(create.headers.get("openai-beta"), null);
  });
});

Deno.test("openai beta: a target without the opt-in names each beta as dropped (translated, Azure)", async () => {
  await withGateway(async (gw, up, sdk) => {
    for (
      const [model, upstreamPath] of [["chat-claude", "/ant/v1/messages"], [
        "chat-azure",
        "/az/openai/v1/responses",
      ]]
    ) {
      const { response } = await sdk.beta.responses.create({
        model,
        input: "hi",
        store: false,
        betas: [BETA],
        multi_agent: MULTI_AGENT,
      }).withResponse();
      const request = up.requests.at(-1)!;
      assert.equal(request.path, upstreamPath, model);
      assert.equal(request.headers.get("openai-beta"), null, model);
      const dropped = response.headers.get("x-gateway-dropped") ?? "";
      assert.equal(dropped.split(",")[0], `openai-beta:${BETA}`, `${model}: ${dropped}`);
      assert.equal(gw.records.at(-1)?.dropped?.split(",")[0], `openai-beta:${BETA}`, model);
    }
    const { response } = await sdk.beta.responses.compact({ model: "chat-azure", input: "hi", betas: [BETA] })
      .withResponse();
    assert.equal(response.headers.get("x-gateway-dropped"), `openai-beta:${BETA}`);
    const count = await sdk.beta.responses.inputTokens.count({
      model: "chat-claude",
      input: "hi",
      betas: [BETA],
    })
      .withResponse();
    assert.equal(count.response.headers.get("x-gateway-dropped"), `openai-beta:${BETA}`);
  });
});

// A header value is client text: only comma-separated names go upstream (the SDK cannot send another, so by hand).
Deno.test("openai beta: a malformed openai-beta is not passed upstream", async () => {
  await withGateway(async (gw, up) => {
    const request = await sent(up, () =>
      gw.fetch("/v1/responses", {
        method: "POST",
        headers: {
          authorization: `Bearer ${TEST_TOKEN}`,
          "content-type": "application/json",
          "openai-beta": "responses_multi_agent=v1; injected",
        },
        body: JSON.stringify({ model: "chat-oai", input: "hi", store: false }),
      }).then((r) => r.text()));
    assert.equal(request.headers.get("openai-beta"), null);
    assert.equal(request.path, "/oai/v1/responses");
  });
});
