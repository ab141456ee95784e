/**
 * Tool calls from OpenAI-compatible upstreams that bend the chat form, through `/v1/messages` on a translated
 * target, as the official `@anthropic-ai/sdk` reads them: a call ended with `finish_reason: "stop"` (Gemini's
 * OpenAI-compatible endpoint streams calls so) is still a `tool_use` stop, so the SDK's tool runner runs it;
 * streamed arguments that are not one JSON object (cut short, an array, `null`) end the stream with an error, as
 * the whole answer is a 502, rather than reach a tool as what the SDK's lenient parser made of them.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { FAKE_KEY } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";

/** A gateway whose alias `oa-raw` is an OpenAI-compatible upstream answering what the test scripts. */
async function withRawUpstream(
  fn: (client: Anthropic, upstream: RawUpstream, gw: TestGateway) => Promise<void>,
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
  const client = new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 0 });
  try {
    await fn(client, upstream, gw);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
}

/** An SSE frame of one chat chunk. */
function sse(delta: unknown, finish: string | null = null): string {
  const chunk = { id: "c", object: "chat.completion.chunk", created: 1, model: "gpt-raw" };
  return `data: ${JSON.stringify({ ...chunk, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

/** A streamed answer of `frames` (chunks of the chat form), then `[DONE]`. */
function streamed(...frames: string[]): RawStep {
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [sse({ role: "assistant", content: null }), ...frames, "data: [DONE]\n\n"],
  };
}

/** A whole chat completion of `message`, ending with `finish`. */
function whole(message: Record<string, unknown>, finish: string): RawStep {
  return {
    status: 200,
    headers: { "content-type": "application/json" },
    chunks: [JSON.stringify({
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "gpt-raw",
      choices: [{
        index: 0,
        finish_reason: finish,
        message: { role: "assistant", content: null, ...message },
      }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    })],
  };
}

const WEATHER_SCHEMA = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
} as const;
const WEATHER: Anthropic.Tool = {
  name: "get_weather",
  input_schema: { ...WEATHER_SCHEMA, required: ["city"] },
};

const SYDNEY = {
  id: "function-call-1",
  type: "function",
  function: { name: "get_weather", arguments: '{"city":"Sydney"}' },
};

Deno.test("messages tool stream: a call ended with finish_reason stop is a tool_use the SDK's tool runner runs", async () => {
  await withRawUpstream(async (client, upstream) => {
    // Gemini's OpenAI-compatible endpoint: the call whole in one chunk, then `stop`.
    upstream.next = streamed(sse({ tool_calls: [{ index: 0, ...SYDNEY }] }), sse({}, "stop"));
    const ran: unknown[] = [];
    const runner = client.beta.messages.toolRunner({
      model: "oa-raw",
      max_tokens: 200,
      stream: true,
      messages: [{ role: "user", content: "Weather in Sydney?" }],
      tools: [betaTool({
        name: "get_weather",
        description: "Weather for a city",
        inputSchema: WEATHER_SCHEMA,
        run: (input) => {
          ran.push(input);
          // The model's next answer, once it has the tool's result.
          upstream.next = streamed(sse({ content: "It is sunny in Sydney." }), sse({}, "stop"));
          return "sunny";
        },
      })],
    });
    const final = await runner.runUntilDone();
    assert.deepEqual(ran, [{ city: "Sydney" }], "the tool ran");
    assert.equal(final.stop_reason, "end_turn");
    assert.deepEqual(final.content, [{ type: "text", text: "It is sunny in Sydney." }]);
    assert.equal(upstream.requests.length, 2);

    // The whole answer says the same.
    upstream.next = whole({ tool_calls: [SYDNEY] }, "stop");
    const message = await client.messages.create({
      model: "oa-raw",
      max_tokens: 200,
      messages: [{ role: "user", content: "Weather in Sydney?" }],
      tools: [WEATHER],
    });
    assert.equal(message.stop_reason, "tool_use");
    // A call cut off by the output limit still stops with max_tokens.
    upstream.next = whole({
      tool_calls: [{ ...SYDNEY, function: { name: "get_weather", arguments: '{"ci' } }],
    }, "length");
    const cut = await client.messages.create({
      model: "oa-raw",
      max_tokens: 5,
      messages: [{ role: "user", content: "Weather in Sydney?" }],
      tools: [WEATHER],
    });
    assert.equal(cut.stop_reason, "max_tokens");
  });
});

Deno.test("messages tool stream: arguments that are not one JSON object end the stream with an error the SDK raises", async () => {
  await withRawUpstream(async (client, upstream, gw) => {
    const params = {
      model: "oa-raw",
      max_tokens: 200,
      messages: [{ role: "user" as const, content: "Weather in Sydney?" }],
      tools: [WEATHER],
    };
    const call = (args: string) => ({ ...SYDNEY, function: { name: "get_weather", arguments: args } });
    for (const args of ['{"city": "Sydney"', "[1,2]", "null"]) {
      upstream.next = streamed(sse({ tool_calls: [{ index: 0, ...call(args) }] }), sse({}, "tool_calls"));
      const stream = client.messages.stream(params);
      const blocks: unknown[] = [];
      stream.on("contentBlock", (block) => blocks.push(block));
      await assert.rejects(stream.finalMessage(), /not a JSON object/, args);
      assert.deepEqual(blocks, [], `${args}: no tool_use block reached the client whole`);
      // The whole answer is the same upstream fault.
      upstream.next = whole({ tool_calls: [call(args)] }, "tool_calls");
      const res = await fetch(`${gw.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": TEST_TOKEN, "content-type": "application/json" },
        body: JSON.stringify(params),
      });
      assert.equal(res.status, 502, args);
      assert.equal((await res.json()).error.type, "api_error");
    }
    // Cut off by the output limit, the half call is the answer's: a max_tokens stop, as Anthropic's own.
    upstream.next = streamed(
      sse({ tool_calls: [{ index: 0, ...call('{"city": "Syd') }] }),
      sse({}, "length"),
    );
    const cut = await client.messages.stream(params).finalMessage();
    assert.equal(cut.stop_reason, "max_tokens");
  });
});
