/**
 * `POST /v1/messages/count_tokens` with extended thinking on Claude on Bedrock, whose CountTokens takes the
 * InvokeModel body: Claude requires `max_tokens` above `thinking.budget_tokens` there as on InvokeModel (the
 * fake refuses it as Bedrock does), and a count request has no `max_tokens` of its own, so the one the gateway
 * adds must clear the budget. Otherwise every count of a thinking request (Claude Code's, whenever thinking is
 * on) fails upstream and the client gets the gateway's estimate instead of Bedrock's exact count.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { FAKE_AWS, FAKE_REGION, type FakeBedrock, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_BEDROCK_INVOKE_COUNT_BASE } from "../helpers/fake_bedrock_claude.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { inProcessGateway } from "../helpers/in_process.ts";

const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

function configFor(bedrock: FakeBedrock): string {
  return `
providers:
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-bedrock-claude: { type: chat, targets: [ { provider: aws, model: "${CLAUDE}", retries: 0 } ] }
${TEST_TOKENS_YAML}`;
}

Deno.test("messages count_tokens: Claude on Bedrock counts a thinking request exactly (max_tokens above the budget)", async () => {
  const bedrock = startFakeBedrock();
  try {
    const gw = inProcessGateway(configFor(bedrock));
    const text = "How many tokens is this?";
    for (const budget of [1024, 2048, 31999]) {
      const before = gw.records.length;
      const response = await gw.fetch("/v1/messages/count_tokens", {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify({
          model: "chat-bedrock-claude",
          thinking: { type: "enabled", budget_tokens: budget },
          messages: [{ role: "user", content: text }],
        }),
      });
      const count = await response.json();
      assert.equal(response.status, 200, JSON.stringify(count));
      // Bedrock's own count, not the gateway's estimate.
      assert.equal(count.estimated, undefined, `budget ${budget}: ${JSON.stringify(count)}`);
      assert.equal(count.input_tokens, FAKE_BEDROCK_INVOKE_COUNT_BASE + text.length);
      const sent = bedrock.requests.at(-1)!;
      assert.equal(sent.action, "count-tokens");
      const invoke = JSON.parse(
        Buffer.from((sent.body.input as { invokeModel: { body: string } }).invokeModel.body, "base64")
          .toString("utf8"),
      );
      assert.deepEqual(invoke.thinking, { type: "enabled", budget_tokens: budget });
      assert.equal(invoke.max_tokens, budget + 1);
      // One usage record per count, of no tokens, exact.
      assert.equal(gw.records.length, before + 1);
      const record = gw.records.at(-1)!;
      assert.equal(record.prompt_tokens, 0);
      assert.equal(record.tokens_estimated, false);
    }
  } finally {
    await bedrock.stop();
  }
});
