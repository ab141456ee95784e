/**
 * The history's reasoning on an OpenAI-compatible upstream, as the provider's `reasoning_history` says. Coding
 * agents send back the reasoning the gateway showed them: Claude Code as a `thinking` block, Codex as a
 * `reasoning` item, a chat client as `reasoning_content`; the gateway sends it upstream on the assistant turn
 * it belongs to. Vendors disagree on that turn's shape: DeepSeek's thinking mode and Kimi K2 refuse a tool
 * loop's second turn without `reasoning_content` (the default), OpenRouter reads the text as `reasoning`, and
 * Groq refuses an assistant turn carrying either ("property 'reasoning_content' is unsupported"): there every
 * agent's tool loop ended at its second turn until `reasoning_history: drop`. The fakes refuse as the vendors
 * do (`tests/helpers/vendor_refusals.ts`).
 */
import assert from "node:assert/strict";
import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { json } from "../helpers/mixed_vendors.ts";
import {
  type RawRequest,
  type RawStep,
  type RawUpstream,
  startRawUpstream,
} from "../helpers/raw_upstream.ts";
import { groqRefusal, thinkingToolTurnRefusal } from "../helpers/vendor_refusals.ts";
import { anthropicClient, openaiClient, withTestGateway } from "../helpers/with_gateway.ts";

type Json = Record<string, unknown>;

const REASONING = "The user wants a file: I should call write.";

/** Each upstream (its path prefix on the raw upstream), the name it answers reasoning by, and what it refuses. */
const VENDORS: Record<string, { answers: string; refusal: (body: Json) => string | null }> = {
  groq: { answers: "reasoning", refusal: groqRefusal },
  openrouter: { answers: "reasoning", refusal: () => null },
  deepseek: { answers: "reasoning_content", refusal: thinkingToolTurnRefusal },
};

/** A chat completion of `message`. */
const completion = (message: Json, finish: string): RawStep =>
  json({
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "thinker",
    choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }],
    usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25 },
  });

/** A vendor's answer: its refusal of the body, else reasoning and a `write` call, or "Written." after the tool. */
function vendor(request: RawRequest): RawStep {
  const name = request.path.split("/")[1];
  const { answers, refusal } = VENDORS[name];
  const body = JSON.parse(request.body) as Json;
  const message = refusal(body);
  if (message !== null) {
    return {
      status: 400,
      headers: { "content-type": "application/json" },
      chunks: [JSON.stringify({ error: { message, type: "invalid_request_error" } })],
    };
  }
  const messages = body.messages as Json[];
  if (messages.at(-1)?.role === "tool") return completion({ content: "Written." }, "stop");
  return completion({
    content: null,
    [answers]: REASONING,
    tool_calls: [{
      id: "call_0",
      type: "function",
      function: { name: "write", arguments: '{"path":"a.txt"}' },
    }],
  }, "tool_calls");
}

/** The three aliases: Groq with `drop`, OpenRouter with `reasoning`, DeepSeek with the default. */
function withGateway(fn: (gw: TestGateway, upstream: RawUpstream) => Promise<void>) {
  return withTestGateway(() => {
    const upstream = startRawUpstream();
    upstream.stepFor = vendor;
    const provider = (name: string, extra: string) =>
      `  ${name}: { type: openai, base_url: "${upstream.url}/${name}/v1", api_key: "sk-${name}-key-0123456789"${extra} }`;
    const alias = (name: string) =>
      `  chat-${name}: { type: chat, targets: [{ provider: ${name}, model: thinker, retries: 0 }] }`;
    const config = `
server: { host: 127.0.0.1, port: 0 }
providers:
${provider("groq", ", reasoning_history: drop")}
${provider("openrouter", ", reasoning_history: reasoning")}
${provider("deepseek", "")}
models:
${Object.keys(VENDORS).map(alias).join("\n")}
${TEST_TOKENS_YAML}`;
    return { fakes: upstream, config };
  }, fn);
}

/** The assistant turn of the last request the upstream got. */
function sentAssistant(upstream: RawUpstream): Json {
  const messages = JSON.parse(upstream.requests.at(-1)!.body).messages as Json[];
  const turns = messages.filter((m) => m.role === "assistant");
  assert.equal(turns.length, 1);
  return turns[0];
}

/** What each alias's upstream got of the first turn's reasoning, in the name it was sent by. */
const EXPECTED: Record<string, { reasoning_content?: string; reasoning?: string }> = {
  "chat-groq": {},
  "chat-openrouter": { reasoning: REASONING },
  "chat-deepseek": { reasoning_content: REASONING },
};

/** The assistant turn's reasoning fields only. */
const reasoningOf = (turn: Json) =>
  Object.fromEntries(Object.entries(turn).filter(([k]) => k === "reasoning" || k === "reasoning_content"));

const TOOL = {
  name: "write",
  description: "Write a file",
  input_schema: { type: "object" as const, properties: { path: { type: "string" } } },
};

Deno.test("reasoning history: Claude Code's thinking blocks reach each upstream as it takes them", async () => {
  await withGateway(async (gw, upstream) => {
    const client: Anthropic = anthropicClient(gw);
    for (const model of Object.keys(EXPECTED)) {
      const ask: Anthropic.MessageParam = { role: "user", content: "Write a.txt" };
      const ask1 = {
        model,
        max_tokens: 4096,
        tools: [TOOL],
        thinking: { type: "enabled", budget_tokens: 2048 },
      };
      const first = await client.messages.create(
        { ...ask1, messages: [ask] } as Anthropic.MessageCreateParamsNonStreaming,
      );
      assert.deepEqual(first.content[0], { type: "thinking", thinking: REASONING, signature: "" }, model);
      const call = first.content.find((b) => b.type === "tool_use")!;
      const { data, response } = await client.messages.create({
        ...ask1,
        messages: [
          ask,
          { role: "assistant", content: first.content as Anthropic.ContentBlockParam[] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "ok" }] },
        ],
      } as Anthropic.MessageCreateParamsNonStreaming).withResponse();
      assert.deepEqual(data.content.map((b) => b.type === "text" ? b.text : b.type), ["Written."], model);
      assert.deepEqual(reasoningOf(sentAssistant(upstream)), EXPECTED[model], model);
      // Groq's omission is the operator's, for every request: not named (the thinking block count still is).
      assert.equal(response.headers.get("x-gateway-dropped"), null, model);
      assert.equal(response.headers.get("x-gateway-dropped-thinking"), "1", model);
    }
  });
});

Deno.test("reasoning history: Codex's reasoning items reach each upstream as it takes them", async () => {
  await withGateway(async (gw, upstream) => {
    const client: OpenAI = openaiClient(gw);
    const tools: OpenAI.Responses.Tool[] = [{
      type: "function",
      name: "write",
      strict: false,
      parameters: { type: "object", properties: { path: { type: "string" } } },
    }];
    for (const model of Object.keys(EXPECTED)) {
      const ask: OpenAI.Responses.ResponseInputItem = { role: "user", content: "Write a.txt" };
      const first = await client.responses.create({ model, tools, store: false, input: [ask] });
      assert.deepEqual(first.output.map((i) => i.type), ["reasoning", "function_call"], model);
      const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall;
      const { data, response } = await client.responses.create({
        model,
        tools,
        store: false,
        input: [
          ask,
          ...first.output as OpenAI.Responses.ResponseInputItem[],
          { type: "function_call_output", call_id: call.call_id, output: "ok" },
        ],
      }).withResponse();
      assert.equal(data.output_text, "Written.", model);
      assert.deepEqual(reasoningOf(sentAssistant(upstream)), EXPECTED[model], model);
      assert.equal(response.headers.get("x-gateway-dropped"), null, model);
    }
  });
});

Deno.test("reasoning history: a chat client's own reasoning_content reaches each upstream as it takes it", async () => {
  await withGateway(async (gw, upstream) => {
    const client: OpenAI = openaiClient(gw);
    const history = {
      role: "assistant" as const,
      content: null,
      reasoning_content: REASONING,
      tool_calls: [{
        id: "call_0",
        type: "function" as const,
        function: { name: "write", arguments: '{"path":"a.txt"}' },
      }],
    };
    for (const model of Object.keys(EXPECTED)) {
      const { data, response } = await client.chat.completions.create({
        model,
        messages: [
          { role: "user", content: "Write a.txt" },
          history as OpenAI.Chat.ChatCompletionAssistantMessageParam,
          { role: "tool", tool_call_id: "call_0", content: "ok" },
        ],
      }).withResponse();
      assert.equal(data.choices[0].message.content, "Written.", model);
      assert.deepEqual(reasoningOf(sentAssistant(upstream)), EXPECTED[model], model);
      assert.equal(response.headers.get("x-gateway-dropped"), null, model);
    }
  });
});
