/**
 * Streamed tool calls from OpenAI-compatible servers that bend the chat form, through every client API the
 * gateway serves, each read by its official SDK: parallel calls without `tool_calls[].index` (Gemini's
 * OpenAI-compatible endpoint) or all at the same one (Ollama) reach chat completions, Responses and Messages as
 * separate calls; a call whose id and name come in a later chunk than its first (vLLM, vmlx) reaches Responses and
 * Messages with them, and a call that never gets a name ends the stream with an error, which the SDKs raise.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";

interface Clients {
  openai: OpenAI;
  anthropic: Anthropic;
}

/** A gateway whose alias `oa-raw` is an OpenAI-compatible upstream answering what the test scripts. */
async function withRawUpstream(
  fn: (clients: Clients, upstream: RawUpstream, gw: TestGateway) => Promise<void>,
) {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
models:
  oa-raw: { type: chat, targets: [ { provider: oa, model: gpt-raw } ] }
  chat-unused: { type: chat, targets: [ { provider: oa, model: gpt-raw } ] }
${TEST_TOKENS_YAML}`);
  const clients = {
    openai: new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 }),
    anthropic: new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 0 }),
  };
  try {
    await fn(clients, upstream, gw);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
}

/** A streamed answer of these chat-form deltas, then the finish and `[DONE]`. */
function streamed(deltas: unknown[], finish = "tool_calls"): RawStep {
  const frame = (delta: unknown, finish: string | null = null) =>
    `data: ${
      JSON.stringify({
        id: "c",
        object: "chat.completion.chunk",
        created: 1,
        model: "gpt-raw",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
    }\n\n`;
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      frame({ role: "assistant", content: null }),
      ...deltas.map((d) => frame(d)),
      frame({}, finish),
      "data: [DONE]\n\n",
    ],
  };
}

const WEATHER = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
};
const PROMPT = "Weather in Sydney and Paris?";

/** The calls each client API gave, as [id, name, arguments] (arguments parsed). */
type Calls = [string, string, unknown][];

async function chatCalls(openai: OpenAI): Promise<Calls> {
  const final = await openai.chat.completions.stream({
    model: "oa-raw",
    messages: [{ role: "user", content: PROMPT }],
    tools: [{ type: "function", function: { name: "get_weather", parameters: WEATHER } }],
  }).finalChatCompletion();
  return (final.choices[0].message.tool_calls ?? []).map((c) =>
    c.type === "function" ? [c.id, c.function.name, JSON.parse(c.function.arguments)] : [c.id, c.type, null]
  );
}

async function responsesCalls(openai: OpenAI): Promise<Calls> {
  const final = await openai.responses.stream({
    model: "oa-raw",
    input: PROMPT,
    tools: [{ type: "function", name: "get_weather", parameters: WEATHER, strict: false }],
  }).finalResponse();
  return final.output.flatMap((item): Calls =>
    item.type === "function_call" ? [[item.call_id, item.name, JSON.parse(item.arguments)]] : []
  );
}

async function messagesCalls(anthropic: Anthropic): Promise<Calls> {
  const final = await anthropic.messages.stream({
    model: "oa-raw",
    max_tokens: 200,
    messages: [{ role: "user", content: PROMPT }],
    tools: [{ name: "get_weather", input_schema: { ...WEATHER, type: "object" } }],
  }).finalMessage();
  assert.equal(final.stop_reason, "tool_use");
  return final.content.flatMap((b): Calls => b.type === "tool_use" ? [[b.id, b.name, b.input]] : []);
}

Deno.test("openai-compatible tool calls: parallel calls without index reach every client API apart", async () => {
  await withRawUpstream(async ({ openai, anthropic }, upstream) => {
    const call = (id: string, args: string, name?: string) => ({
      tool_calls: [{ id, type: "function", function: { ...(name ? { name } : {}), arguments: args } }],
    });
    const answers: Record<string, unknown[]> = {
      // Gemini's OpenAI-compatible endpoint: each call whole, in a chunk of its own, with its own id.
      "each whole": [
        call("function-call-1", '{"city":"Sydney"}', "get_weather"),
        call("function-call-2", '{"city":"Paris"}', "get_weather"),
      ],
      // Both in one delta.
      "one delta": [{
        tool_calls: [
          {
            id: "function-call-1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Sydney"}' },
          },
          {
            id: "function-call-2",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      }],
      // Ollama: each call whole, every one at index 0.
      "same index": [
        {
          tool_calls: [{
            index: 0,
            ...call("function-call-1", '{"city":"Sydney"}', "get_weather").tool_calls[0],
          }],
        },
        {
          tool_calls: [{
            index: 0,
            ...call("function-call-2", '{"city":"Paris"}', "get_weather").tool_calls[0],
          }],
        },
      ],
      // In fragments: a fragment without an id continues the call before it.
      fragments: [
        call("function-call-1", '{"city":', "get_weather"),
        { tool_calls: [{ function: { arguments: '"Sydney"}' } }] },
        call("function-call-2", '{"city":', "get_weather"),
        { tool_calls: [{ function: { arguments: '"Paris"}' } }] },
      ],
    };
    const expected: Calls = [
      ["function-call-1", "get_weather", { city: "Sydney" }],
      ["function-call-2", "get_weather", { city: "Paris" }],
    ];
    for (const [name, deltas] of Object.entries(answers)) {
      upstream.next = streamed(deltas);
      assert.deepEqual(await chatCalls(openai), expected, `chat completions, ${name}`);
      assert.deepEqual(await responsesCalls(openai), expected, `responses, ${name}`);
      assert.deepEqual(await messagesCalls(anthropic), expected, `messages, ${name}`);
    }
  });
});

Deno.test("openai-compatible tool calls: a call named in a later chunk reaches Responses and Messages named", async () => {
  await withRawUpstream(async ({ openai, anthropic }, upstream) => {
    const tool = (fields: Record<string, unknown>) => ({ tool_calls: [{ index: 0, ...fields }] });
    const answers: Record<string, unknown[]> = {
      // The first fragment names nothing; the id and name come next, then the arguments.
      "id and name later": [
        tool({ function: { arguments: "" } }),
        tool({ id: "call_abc", type: "function", function: { name: "get_weather" } }),
        tool({ function: { arguments: '{"city":' } }),
        tool({ function: { arguments: '"Sydney"}' } }),
      ],
      // vLLM and vmlx: an empty name first, the real one with the arguments next.
      "empty name first": [
        tool({ id: "call_abc", type: "function", function: { name: "", arguments: "" } }),
        tool({
          id: "call_abc",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Sydney"}' },
        }),
      ],
    };
    const expected: Calls = [["call_abc", "get_weather", { city: "Sydney" }]];
    for (const [name, deltas] of Object.entries(answers)) {
      upstream.next = streamed(deltas);
      assert.deepEqual(await responsesCalls(openai), expected, `responses, ${name}`);
      assert.deepEqual(await messagesCalls(anthropic), expected, `messages, ${name}`);
    }
    // A call that never gets a name cannot be run: the stream ends with an error, which the SDKs raise.
    upstream.next = streamed([
      tool({ id: "call_abc", type: "function", function: { arguments: '{"city":"Sydney"}' } }),
    ]);
    await assert.rejects(responsesCalls(openai), /tool call without a name/);
    await assert.rejects(messagesCalls(anthropic), /tool call without a name/);
  });
});
