/**
 * A conversation with a custom (freeform) tool goes on: the assistant turn the model answered, with its
 * `{type: "custom", custom: {name, input}}` call, is sent back by the client (the OpenAI SDK as is) and reaches
 * an OpenAI-compatible target unchanged; an Anthropic target, which takes function tools only, refuses it by
 * name with a 400, as it refuses a custom tool in `tools`.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";

const CALL = { id: "call_1", type: "custom", custom: { name: "grep", input: "TODO" } };

function answer(message: Record<string, unknown>, finish: string) {
  return {
    status: 200,
    headers: { "content-type": "application/json" },
    chunks: [JSON.stringify({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "gpt-raw",
      choices: [{
        index: 0,
        finish_reason: finish,
        logprobs: null,
        message: { role: "assistant", ...message },
      }],
    })],
  };
}

Deno.test("a custom tool's call sent back as history reaches an OpenAI target, and is refused by name on Anthropic", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
  claude: { type: anthropic, base_url: "${upstream.url}", api_key: "sk-ant-key-abcdef0123456789" }
models:
  chat-oa: { type: chat, targets: [ { provider: oa, model: gpt-raw } ] }
  chat-claude: { type: chat, targets: [ { provider: claude, model: claude-sonnet-4-5 } ] }
${TEST_TOKENS_YAML}`);
  try {
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
    const tools = [{ type: "custom" as const, custom: { name: "grep" } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "find TODOs" }];
    upstream.next = answer({ content: null, refusal: null, tool_calls: [CALL] }, "tool_calls");
    const first = await client.chat.completions.create({ model: "chat-oa", messages, tools });
    assert.deepEqual(first.choices[0].message.tool_calls, [CALL]);
    messages.push(first.choices[0].message, { role: "tool", tool_call_id: "call_1", content: "a.ts:1 TODO" });

    upstream.next = answer({ content: "One TODO.", refusal: null }, "stop");
    const second = await client.chat.completions.create({ model: "chat-oa", messages, tools });
    assert.equal(second.choices[0].message.content, "One TODO.");
    const sent = JSON.parse(upstream.requests[1].body);
    assert.deepEqual(sent.messages[1].tool_calls, [CALL]);
    assert.deepEqual(sent.messages[2], { role: "tool", tool_call_id: "call_1", content: "a.ts:1 TODO" });

    const refused = await client.chat.completions.create({ model: "chat-claude", messages }).then(
      () => assert.fail("accepted"),
      (err: unknown) => err,
    );
    assert.ok(refused instanceof OpenAI.BadRequestError);
    assert.equal(refused.param, "messages[1].tool_calls[0].type");
    assert.equal(refused.message, "400 Tool calls of type 'custom' are not supported by Anthropic models.");
    assert.equal(upstream.requests.length, 2);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});
