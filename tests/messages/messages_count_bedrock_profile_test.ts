/**
 * `POST /v1/messages/count_tokens` for Claude on Bedrock behind a cross-region inference profile, the only way
 * newer Claude models are invoked there. CountTokens takes a foundation model id and, as most public reports
 * have it, refuses a profile id ("The provided model doesn't support counting tokens."), which the fake does
 * too: the gateway counts with the foundation model id first, then, after a 400, with the id as configured (some
 * models are reported the other way round), and only then estimates. Never more than two calls.
 */
import assert from "node:assert/strict";
import { FAKE_AWS, FAKE_REGION, type FakeBedrock, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_BEDROCK_INVOKE_COUNT_BASE } from "../helpers/fake_bedrock_claude.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";

const TEXT = "How many tokens is this?";

function configFor(bedrock: FakeBedrock, model: string): string {
  return `
providers:
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-claude: { type: chat, targets: [ { provider: aws, model: "${model}", retries: 0 } ] }
${TEST_TOKENS_YAML}`;
}

/** The count answer for `model`, and the model ids CountTokens was called with. */
async function count(model: string): Promise<{ body: Record<string, unknown>; calledWith: string[] }> {
  const bedrock = startFakeBedrock();
  try {
    const gw = inProcessGateway(configFor(bedrock, model));
    const response = await gw.fetch("/v1/messages/count_tokens", {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "chat-claude", messages: [{ role: "user", content: TEXT }] }),
    });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    const calls = bedrock.requests.filter((r) => r.action === "count-tokens");
    return { body, calledWith: calls.map((r) => r.modelId) };
  } finally {
    await bedrock.stop();
  }
}

const EXACT = { input_tokens: FAKE_BEDROCK_INVOKE_COUNT_BASE + TEXT.length };

Deno.test("messages count_tokens: a Bedrock inference profile is counted exactly, as its foundation model", async () => {
  for (const prefix of ["us", "eu", "apac", "global"]) {
    const { body, calledWith } = await count(`${prefix}.anthropic.claude-sonnet-4-5-20250929-v1:0`);
    assert.deepEqual(body, EXACT, prefix);
    assert.deepEqual(calledWith, ["anthropic.claude-sonnet-4-5-20250929-v1:0"], prefix);
  }
});

Deno.test("messages count_tokens: an inference-profile ARN is counted as the foundation model it names", async () => {
  const arn =
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0";
  const { body, calledWith } = await count(arn);
  assert.deepEqual(body, EXACT);
  assert.deepEqual(calledWith, ["anthropic.claude-opus-4-1-20250805-v1:0"]);
});

Deno.test("messages count_tokens: a profile whose foundation model is refused is counted as configured", async () => {
  const profile = "us.anthropic.claude-profilecount-v1:0";
  const { body, calledWith } = await count(profile);
  assert.deepEqual(body, EXACT);
  assert.deepEqual(calledWith, ["anthropic.claude-profilecount-v1:0", profile]);
});

Deno.test("messages count_tokens: a model that counts in neither form is estimated after two calls at most", async () => {
  const profile = "us.anthropic.claude-nocount-v1:0";
  const refused = await count(profile);
  assert.equal(refused.body.estimated, true);
  assert.deepEqual(refused.calledWith, ["anthropic.claude-nocount-v1:0", profile]);
  // A foundation model id has no other form: one call.
  const bare = await count("anthropic.claude-nocount-v1:0");
  assert.equal(bare.body.estimated, true);
  assert.deepEqual(bare.calledWith, ["anthropic.claude-nocount-v1:0"]);
});

Deno.test("messages count_tokens: an application inference profile ARN, which names no model, is asked once", async () => {
  const arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123";
  const { calledWith } = await count(arn);
  assert.deepEqual(calledWith, [arn]);
});
