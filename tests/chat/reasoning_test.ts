/**
 * End to end with the official `openai` SDK: upstream reasoning reaches a chat client as `reasoning_content`
 * (apart from `content`, streamed delta by delta) through the fake Anthropic, Gemini and Bedrock vendors and an
 * OpenAI-compatible server that sends vLLM's `reasoning`; `reasoning_effort` reaches each vendor as its own
 * thinking setting.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  FAKE_CLAUDE_SIGNATURE,
  FAKE_CLAUDE_THINKING,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_GEMINI_KEY,
  FAKE_GEMINI_THOUGHT,
  FAKE_GEMINI_THOUGHT_TOKENS,
  GEMINI_ANSWER,
  startFakeGemini,
} from "../helpers/fake_gemini.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_BEDROCK_REASONING,
  FAKE_BEDROCK_SIGNATURE,
  FAKE_REGION,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { startFakes } from "../helpers/fakes.ts";

const VLLM_REASONING = "Two and two make four, café ☕.";
const VLLM_ANSWER = "4";

/** A vLLM-style OpenAI-compatible server: reasoning as `reasoning`, its count in completion_tokens_details. */
function startFakeVllm() {
  const requests: Record<string, unknown>[] = [];
  const usage = {
    prompt_tokens: 9,
    completion_tokens: 14,
    total_tokens: 23,
    completion_tokens_details: { reasoning_tokens: 11 },
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const body = await request.json();
    requests.push(body);
    const id = { id: "chatcmpl-vllm", created: 1, model: "qwen3" };
    if (body.stream !== true) {
      return Response.json({
        ...id,
        object: "chat.completion",
        choices: [{
          index: 0,
          message: { role: "assistant", content: VLLM_ANSWER, reasoning: VLLM_REASONING },
          finish_reason: "stop",
        }],
        usage,
      });
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          ...id,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const frames = [
      chunk({ role: "assistant", content: "" }),
      ...VLLM_REASONING.split(/(?<= )/).map((r) => chunk({ reasoning: r })),
      chunk({ content: VLLM_ANSWER }),
      chunk({}, "stop"),
      `data: ${JSON.stringify({ ...id, object: "chat.completion.chunk", choices: [], usage })}\n\n`,
      "data: [DONE]\n\n",
    ];
    return new Response(ReadableStream.from(frames.map((f) => new TextEncoder().encode(f))), {
      headers: { "content-type": "text/event-stream" },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/v1`, requests, stop: () => server.shutdown() };
}

/** The four upstreams, started and stopped together. */
const startAll = () =>
  startFakes({
    anthropic: startFakeAnthropic,
    gemini: startFakeGemini,
    bedrock: startFakeBedrock,
    vllm: startFakeVllm,
  });
type Fakes = ReturnType<typeof startAll>;

function configFor(fakes: Fakes): string {
  const chat = (alias: string, provider: string, model: string) =>
    `  ${alias}: { type: chat, targets: [ { provider: ${provider}, model: "${model}" } ] }`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  claude: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}", default_max_tokens: 2000 }
  gem: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fakes.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
  vllm: { type: openai, base_url: "${fakes.vllm.url}" }
models:
${chat("chat-claude", "claude", "claude-ok")}
${chat("chat-claude-tools", "claude", "claude-tools")}
${chat("chat-gemini", "gem", "gem-ok")}
${chat("chat-bedrock", "aws", "us.anthropic.claude-sonnet-4-20250514-v1:0")}
${chat("chat-nova", "aws", "amazon.nova-pro-v1:0")}
${chat("chat-vllm", "vllm", "qwen3")}
${TEST_TOKENS_YAML}`;
}

const withGateway = (fn: (client: OpenAI, fakes: Fakes) => Promise<void>) =>
  withFakeGateway(startAll, configFor, (_gw, fakes, client) => fn(client, fakes));

/** What each alias's upstream reasons and answers. */
const EXPECTED: Record<string, { reasoning: string; answer: string; secret?: string }> = {
  "chat-claude": {
    reasoning: FAKE_CLAUDE_THINKING,
    answer: FAKE_CLAUDE_ANSWER,
    secret: FAKE_CLAUDE_SIGNATURE,
  },
  "chat-gemini": { reasoning: FAKE_GEMINI_THOUGHT, answer: GEMINI_ANSWER },
  "chat-bedrock": {
    reasoning: FAKE_BEDROCK_REASONING,
    answer: FAKE_BEDROCK_ANSWER,
    secret: FAKE_BEDROCK_SIGNATURE,
  },
  "chat-vllm": { reasoning: VLLM_REASONING, answer: VLLM_ANSWER },
};

/** The `reasoning_content` the SDK's types do not name. */
const reasoningOf = (fields: unknown): unknown =>
  (fields as { reasoning_content?: unknown }).reasoning_content;

Deno.test("reasoning e2e: a whole answer carries reasoning_content apart from content, for every vendor", async () => {
  await withGateway(async (client) => {
    for (const [alias, expected] of Object.entries(EXPECTED)) {
      const completion = await client.chat.completions.create({
        model: alias,
        messages: [{ role: "user", content: "Hi" }],
        reasoning_effort: "high",
      });
      const message = completion.choices[0].message;
      assert.equal(reasoningOf(message), expected.reasoning, alias);
      assert.equal(message.content, expected.answer, `${alias}: reasoning is not mixed into content`);
      if (expected.secret) {
        assert.ok(!JSON.stringify(completion).includes(expected.secret), `${alias}: signature`);
      }
    }
  });
});

Deno.test("reasoning e2e: streamed reasoning_content deltas come before the answer, for every vendor", async () => {
  await withGateway(async (client) => {
    for (const [alias, expected] of Object.entries(EXPECTED)) {
      const stream = await client.chat.completions.create({
        model: alias,
        messages: [{ role: "user", content: "Hi" }],
        reasoning_effort: "high",
        stream: true,
        stream_options: { include_usage: true },
      });
      let reasoning = "";
      let content = "";
      let reasoningAfterContent = false;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const delta = chunk.choices[0]?.delta;
        if (delta === undefined) continue;
        const piece = reasoningOf(delta);
        if (typeof piece === "string") {
          reasoningAfterContent ||= content !== "";
          reasoning += piece;
        }
        content += delta.content ?? "";
      }
      assert.equal(reasoning, expected.reasoning, alias);
      assert.equal(content, expected.answer, `${alias}: reasoning is not mixed into content`);
      assert.equal(reasoningAfterContent, false, `${alias}: reasoning comes first`);
      assert.ok(usage, `${alias}: usage`);
      if (alias === "chat-gemini") {
        assert.equal(usage.completion_tokens_details?.reasoning_tokens, FAKE_GEMINI_THOUGHT_TOKENS);
      }
      if (alias === "chat-vllm") assert.equal(usage.completion_tokens_details?.reasoning_tokens, 11);
    }
  });
});

Deno.test("reasoning e2e: reasoning_effort reaches each vendor as its own thinking setting", async () => {
  await withGateway(async (client, fakes) => {
    const ask = (model: string, effort: OpenAI.ReasoningEffort, extra: Record<string, unknown> = {}) =>
      client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hi" }],
        reasoning_effort: effort,
        ...extra,
      });
    await ask("chat-claude", "medium");
    assert.deepEqual(fakes.anthropic.requests.at(-1)!.body.thinking, {
      type: "enabled",
      budget_tokens: 8192,
    });
    assert.equal(fakes.anthropic.requests.at(-1)!.body.max_tokens, 2000 + 8192, "default answer room kept");
    await ask("chat-claude", "low", { max_completion_tokens: 5000 });
    assert.deepEqual(
      [fakes.anthropic.requests.at(-1)!.body.thinking, fakes.anthropic.requests.at(-1)!.body.max_tokens],
      [{ type: "enabled", budget_tokens: 2048 }, 5000],
    );
    await ask("chat-gemini", "low");
    assert.deepEqual(
      (fakes.gemini.requests.at(-1)!.body.generationConfig as Record<string, unknown>).thinkingConfig,
      { thinkingBudget: 1024, includeThoughts: true },
    );
    const off = await ask("chat-gemini", "none");
    assert.deepEqual(
      (fakes.gemini.requests.at(-1)!.body.generationConfig as Record<string, unknown>).thinkingConfig,
      { thinkingBudget: 0 },
    );
    assert.equal(reasoningOf(off.choices[0].message), undefined, "no thoughts asked for, none shown");
    await ask("chat-bedrock", "minimal");
    assert.deepEqual(fakes.bedrock.requests.at(-1)!.body.additionalModelRequestFields, {
      thinking: { type: "enabled", budget_tokens: 1024 },
    });
    await ask("chat-vllm", "high");
    assert.equal(fakes.vllm.requests.at(-1)!.reasoning_effort, "high", "OpenAI-compatible: passed through");
    const plain = await client.chat.completions.create({
      model: "chat-claude",
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(reasoningOf(plain.choices[0].message), undefined, "no effort, no thinking");
    assert.equal("thinking" in fakes.anthropic.requests.at(-1)!.body, false);
  });
});

Deno.test("reasoning e2e: efforts a vendor cannot take are 400s naming the parameter", async () => {
  await withGateway(async (client, fakes) => {
    const cases: [string, string, string][] = [
      ["chat-gemini", "minimal", "reasoning_effort"],
      ["chat-nova", "low", "reasoning_effort"],
      ["chat-claude", "xhigh", "reasoning_effort"],
    ];
    for (const [model, effort, param] of cases) {
      const before = fakes.gemini.requests.length + fakes.bedrock.requests.length +
        fakes.anthropic.requests.length;
      await assert.rejects(
        client.chat.completions.create({
          model,
          messages: [{ role: "user", content: "Hi" }],
          reasoning_effort: effort as OpenAI.ReasoningEffort,
        }),
        (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === param,
        `${model} ${effort}`,
      );
      const after = fakes.gemini.requests.length + fakes.bedrock.requests.length +
        fakes.anthropic.requests.length;
      assert.equal(after, before, "refused before any upstream call");
    }
    await assert.rejects(
      client.chat.completions.create({
        model: "chat-claude",
        messages: [{ role: "user", content: "Hi" }],
        reasoning_effort: "low",
        max_completion_tokens: 1000,
      }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "max_completion_tokens",
    );
  });
});

Deno.test("reasoning e2e: an Anthropic tool round trip with reasoning_effort completes", async () => {
  await withGateway(async (client, fakes) => {
    const tools: OpenAI.ChatCompletionTool[] = [{
      type: "function",
      function: {
        name: "get_weather",
        parameters: { type: "object", properties: { location: { type: "string" } } },
      },
    }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in SF?" }];
    const first = await client.chat.completions.create({
      model: "chat-claude-tools",
      messages,
      tools,
      reasoning_effort: "high",
    });
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    assert.equal(reasoningOf(first.choices[0].message), FAKE_CLAUDE_THINKING);
    messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "65°F, sunny" });
    // The fake refuses, as Anthropic does, a thinking request whose last assistant turn has tool_use but no
    // signed thinking block; the gateway answers this step without thinking instead.
    const second = await client.chat.completions.create({
      model: "chat-claude-tools",
      messages,
      tools,
      reasoning_effort: "high",
    });
    assert.equal(second.choices[0].finish_reason, "tool_calls");
    assert.equal("thinking" in fakes.anthropic.requests.at(-1)!.body, false);
  });
});

Deno.test("reasoning e2e: the SDK's strict stream helper accepts reasoning deltas", async () => {
  await withGateway(async (client) => {
    for (const [alias, expected] of Object.entries(EXPECTED)) {
      const final = await client.chat.completions.stream({
        model: alias,
        messages: [{ role: "user", content: "Hi" }],
        reasoning_effort: "high",
      }).finalChatCompletion();
      assert.equal(final.choices[0].message.content, expected.answer, alias);
    }
  });
});
