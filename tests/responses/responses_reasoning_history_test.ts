/**
 * Reasoning goes back upstream with the tool loop it belongs to. DeepSeek's thinking mode and Kimi K2 answer
 * the second turn of a tool loop with a 400 ("Missing `reasoning_content` field in the assistant message")
 * unless the assistant turn that called the tools carries its reasoning. Through `POST /v1/responses` on an
 * OpenAI-compatible chat upstream, the reasoning item of the first answer reaches the upstream as that turn's
 * `reasoning_content`, whether the client sends the item back in its input (Codex, `store: false`) or chains
 * with `previous_response_id`. Anthropic, Gemini and Bedrock targets build their own bodies and get exactly
 * what they got without the reasoning item.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

const REASONING = "I should list the files.";
const TOOLS = [{
  type: "function",
  name: "exec_command",
  parameters: { type: "object", properties: { cmd: { type: "string" } } },
}];

const json = (body: unknown): RawStep => ({
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify(body)],
});

/** A chat completion of `message`. */
const completion = (message: Record<string, unknown>, finish: string) =>
  json({
    id: "c1",
    object: "chat.completion",
    created: 1,
    model: "deepseek-reasoner",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
  });

/** DeepSeek in thinking mode: its reasoning, then a tool call. */
const THINK_THEN_CALL = completion({
  content: null,
  reasoning_content: REASONING,
  tool_calls: [{
    id: "call_00_abc",
    type: "function",
    function: { name: "exec_command", arguments: '{"cmd":"ls"}' },
  }],
}, "tool_calls");
const DONE = completion({ content: "One file." }, "stop");

/** A short answer per vendor, for the vendor targets' second turn. */
const ANSWERS: Record<string, RawStep> = {
  "chat-anthropic": json({
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-x",
    content: [{ type: "text", text: "One file." }],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 2 },
  }),
  "chat-gemini": json({
    candidates: [{
      content: { role: "model", parts: [{ text: "One file." }] },
      finishReason: "STOP",
      index: 0,
    }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 },
  }),
  "chat-bedrock": json({
    output: { message: { role: "assistant", content: [{ text: "One file." }] } },
    stopReason: "end_turn",
    usage: { inputTokens: 5, outputTokens: 2, totalTokens: 7 },
  }),
};

Deno.test("responses reasoning history: a tool loop's reasoning goes back upstream as reasoning_content", async (t) => {
  const raw = startRawUpstream();
  const gw = await startGateway(`
providers:
  deepseek: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
  anthropic: { type: anthropic, base_url: "${raw.url}", api_key: "k" }
  gemini: { type: gemini, base_url: "${raw.url}/v1beta", api_key: "k" }
  bedrock: { type: bedrock, region: us-east-1, base_url: "${raw.url}", access_key_id: AKIAQ7EXAMPLEW3RT6YU, secret_access_key: abc }
models:
  chat-deepseek: { type: chat, targets: [ { provider: deepseek, model: deepseek-reasoner } ] }
  chat-anthropic: { type: chat, targets: [ { provider: anthropic, model: claude-x } ] }
  chat-gemini: { type: chat, targets: [ { provider: gemini, model: gemini-x } ] }
  chat-bedrock: { type: chat, targets: [ { provider: bedrock, model: m-bedrock } ] }
${TEST_TOKENS_YAML}`);
  const post = async (body: Record<string, unknown>) => {
    const res = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = await res.json();
    assert.equal(res.status, 200, JSON.stringify(answer));
    return answer as { id: string; output: Record<string, unknown>[] };
  };
  /** The assistant message the upstream got in the last request. */
  const sentAssistant = () => {
    const messages = JSON.parse(raw.requests.at(-1)!.body).messages as Record<string, unknown>[];
    return messages.find((m) => m.role === "assistant");
  };
  try {
    raw.next = THINK_THEN_CALL;
    const first = await post({ model: "chat-deepseek", input: "List the files.", tools: TOOLS });
    assert.deepEqual(first.output.map((i) => i.type), ["reasoning", "function_call"]);
    const call = first.output[1];
    const result = { type: "function_call_output", call_id: call.call_id, output: "a.txt" };
    const expected = {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: "call_00_abc",
        type: "function",
        function: { name: "exec_command", arguments: '{"cmd":"ls"}' },
      }],
      reasoning_content: REASONING,
    };

    await t.step("the output sent back as input (Codex, store: false)", async () => {
      raw.next = DONE;
      await post({
        model: "chat-deepseek",
        store: false,
        tools: TOOLS,
        input: [{ type: "message", role: "user", content: "List the files." }, ...first.output, result],
      });
      assert.deepEqual(sentAssistant(), expected);
    });

    await t.step("chained with previous_response_id", async () => {
      raw.next = DONE;
      await post({ model: "chat-deepseek", tools: TOOLS, previous_response_id: first.id, input: [result] });
      assert.deepEqual(sentAssistant(), expected);
    });

    await t.step("encrypted reasoning alone adds nothing", async () => {
      raw.next = DONE;
      const encrypted = { type: "reasoning", id: "rs_x", summary: [], encrypted_content: "gAAAA" };
      await post({
        model: "chat-deepseek",
        tools: TOOLS,
        input: [{ role: "user", content: "List the files." }, encrypted, first.output[1], result],
      });
      assert.equal("reasoning_content" in sentAssistant()!, false);
    });

    for (const model of Object.keys(ANSWERS)) {
      await t.step(`${model}: the body sent is the one without the reasoning item`, async () => {
        const bodies: string[] = [];
        for (const output of [first.output, first.output.slice(1)]) {
          raw.next = ANSWERS[model];
          await post({
            model,
            store: false,
            tools: TOOLS,
            input: [{ role: "user", content: "Hi" }, ...output, result],
          });
          bodies.push(raw.requests.at(-1)!.body);
        }
        assert.equal(bodies[0], bodies[1]);
        assert.ok(!bodies[0].includes(REASONING));
      });
    }
  } finally {
    await gw.stop();
    await raw.stop();
  }
});
