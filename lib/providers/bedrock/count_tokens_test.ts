/**
 * Bedrock's CountTokens request for the Converse form (from the adapter, so it is the translation the gateway
 * really sends, signed like every Bedrock call) and answer, as in AWS's API reference: `POST
 * /model/{modelId}/count-tokens` with `{input: {converse: {messages, system}}}`, `{inputTokens}` back.
 */
import assert from "node:assert/strict";
import type { BedrockProviderConfig } from "../../config/schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { UpstreamCall } from "../types.ts";
import { bedrockAdapter } from "./adapter.ts";
import { bedrockInputTokens, countModelIds, countTokensBody } from "./count_tokens.ts";

const CONFIG: BedrockProviderConfig = {
  type: "bedrock",
  region: "us-east-1",
  access_key_id: "AKIDTEST",
  secret_access_key: "testsecret",
  headers: {},
  timeouts: {},
  unsupported_params: "error",
};
const MODEL = "anthropic.claude-3-5-haiku-20241022-v1:0";
const CALL: UpstreamCall = {
  target: { provider: "br", model: MODEL } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_1",
};

Deno.test("bedrock count-tokens: the Converse messages and system, without inference settings, signed", async () => {
  const adapter = bedrockAdapter(CONFIG, {});
  const request = adapter.countTokensRequest!({
    chat: {
      model: "alias",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Say hello." }],
      max_tokens: 100,
      temperature: 0.3,
      seed: 1,
    },
  }, CALL);
  assert.ok(request !== null);
  assert.equal(
    request.url,
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/count-tokens",
  );
  assert.deepEqual(JSON.parse(request.body as string), {
    input: {
      converse: {
        messages: [{ role: "user", content: [{ text: "Say hello." }] }],
        system: [{ text: "Be brief." }],
      },
    },
  });
  const signed = await adapter.authorize(request);
  assert.match(
    signed.headers.authorization,
    /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/us-east-1\/bedrock\//,
  );
});

Deno.test("bedrock count-tokens: only the input parts of a Converse body are kept", () => {
  assert.deepEqual(
    countTokensBody({ messages: [], inferenceConfig: { maxTokens: 5 }, toolConfig: { tools: [] } }),
    { input: { converse: { messages: [], toolConfig: { tools: [] } } } },
  );
  // Claude's top_k is a sampling setting too; its thinking is counted.
  assert.deepEqual(countTokensBody({ messages: [], additionalModelRequestFields: { top_k: 64 } }), {
    input: { converse: { messages: [] } },
  });
  const thinking = { type: "enabled", budget_tokens: 2048 };
  assert.deepEqual(countTokensBody({ messages: [], additionalModelRequestFields: { thinking, top_k: 64 } }), {
    input: { converse: { messages: [], additionalModelRequestFields: { thinking } } },
  });
});

Deno.test("bedrock count-tokens: the answer's inputTokens; anything else is a 502", () => {
  assert.equal(bedrockInputTokens({ inputTokens: 12 }, "br"), 12);
  for (const bad of [{}, { inputTokens: null }, { input_tokens: 12 }, { inputTokens: -1 }]) {
    assert.throws(() => bedrockInputTokens(bad, "br"), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 502);
      return true;
    });
  }
});

Deno.test("bedrock count-tokens: an inference profile is counted as its foundation model, then as configured", () => {
  const adapter = bedrockAdapter(CONFIG, {});
  const chat = { model: "alias", messages: [{ role: "user" as const, content: "Hi" }] };
  const at = (model: string) => ({ ...CALL, target: { ...CALL.target, model } });
  for (
    const [model, foundation] of [
      ["us.amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0"],
      ["us-gov.anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-5-sonnet-20240620-v1:0"],
      [
        "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.meta.llama3-2-3b-instruct-v1:0",
        "meta.llama3-2-3b-instruct-v1:0",
      ],
    ]
  ) {
    assert.deepEqual(countModelIds(model), [foundation, model]);
    const first = adapter.countTokensRequest!({ chat }, at(model))!;
    assert.ok(first.url.endsWith(`/model/${encodeURIComponent(foundation)}/count-tokens`), first.url);
    const second = adapter.countTokensFallback!({ chat }, at(model))!;
    assert.ok(second.url.endsWith(`/model/${encodeURIComponent(model)}/count-tokens`), second.url);
    assert.equal(second.body, first.body);
  }
  // A foundation model id, and an application inference profile (which names no model), have one form.
  for (const model of [MODEL, "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"]) {
    assert.deepEqual(countModelIds(model), [model]);
    assert.equal(adapter.countTokensFallback!({ chat }, at(model)), null);
  }
});
