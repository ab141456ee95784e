/**
 * End to end with the official `openai` SDK through the gateway to a fake Anthropic Messages API: the client
 * must not be able to tell that Anthropic answered — strict stream helper, tool calls and errors included.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import { TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

function configFor(fake: FakeAnthropic): string {
  const models = ["ok", "tools", "midstream-error", "400", "429", "500", "529"]
    .map((m) => `  chat-${m}: { type: chat, targets: [ { provider: claude, model: claude-${m} } ] }`)
    .join("\n");
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  claude: { type: anthropic, base_url: "${fake.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}", default_max_tokens: 1000 }
  claude-badkey: { type: anthropic, base_url: "${fake.baseURL}", api_key: "sk-ant-wrong-key-0000000000" }
  claude-drop:
    type: anthropic
    base_url: "${fake.baseURL}"
    api_key: "${FAKE_ANTHROPIC_KEY}"
    default_max_tokens: 1000
    unsupported_params: drop
models:
${models}
  chat-badkey: { type: chat, targets: [ { provider: claude-badkey, model: claude-ok } ] }
  chat-drop: { type: chat, targets: [ { provider: claude-drop, model: claude-ok } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeAnthropic, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakeAnthropic, configFor, fn);
}

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Get the current weather in a given location",
    parameters: {
      type: "object",
      properties: { location: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["location", "unit"],
      additionalProperties: false,
    },
    strict: true,
  },
};

Deno.test("anthropic e2e: non-stream completion, headers and body the upstream received", async () => {
  await withGateway(async (_gw, fake, client) => {
    const { data, response } = await client.chat.completions.create({
      model: "chat-ok",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
      temperature: 0.3,
      user: "end-user-7",
    }).withResponse();
    assert.equal(data.object, "chat.completion");
    assert.equal(data.model, "chat-ok");
    assert.equal(data.id, "chatcmpl-msg_fake01");
    assert.deepEqual(data.choices[0].message, {
      role: "assistant",
      content: FAKE_CLAUDE_ANSWER,
      refusal: null,
    });
    assert.equal(data.choices[0].finish_reason, "stop");
    assert.deepEqual(data.usage, {
      prompt_tokens: 120,
      completion_tokens: 7,
      total_tokens: 127,
      prompt_tokens_details: { cached_tokens: 100 },
    });
    assert.equal(response.headers.get("x-gateway-provider"), "claude");
    assert.equal(response.headers.get("x-gateway-model"), "claude-ok");

    const sent = fake.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages");
    assert.equal(sent.headers.get("x-api-key"), FAKE_ANTHROPIC_KEY);
    assert.equal(sent.headers.get("anthropic-version"), "2023-06-01");
    assert.deepEqual(sent.body, {
      model: "claude-ok",
      max_tokens: 1000,
      messages: [{ role: "user", content: "Hi" }],
      system: "Be brief.",
      temperature: 0.3,
      metadata: { user_id: "end-user-7" },
    });
  });
});

Deno.test("anthropic e2e: stream with and without include_usage", async () => {
  await withGateway(async (_gw, fake, client) => {
    for (const includeUsage of [false, true]) {
      const stream = await client.chat.completions.create({
        model: "chat-ok",
        messages: [{ role: "user", content: "Stream please" }],
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
      });
      let text = "";
      const finishes: (string | null)[] = [];
      const usages = [];
      const ids = new Set<string>();
      for await (const chunk of stream) {
        ids.add(chunk.id);
        text += chunk.choices[0]?.delta.content ?? "";
        if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
        if (chunk.usage) usages.push(chunk.usage);
      }
      assert.equal(text, FAKE_CLAUDE_ANSWER);
      assert.deepEqual(finishes, ["stop"]);
      assert.equal(ids.size, 1);
      assert.deepEqual(
        usages,
        includeUsage
          ? [{
            prompt_tokens: 25,
            completion_tokens: 15,
            total_tokens: 40,
            prompt_tokens_details: { cached_tokens: 0 },
          }]
          : [],
      );
      // stream_options is the gateway's business, never Anthropic's.
      assert.equal(fake.requests.at(-1)!.body.stream, true);
      assert.equal("stream_options" in fake.requests.at(-1)!.body, false);
    }
  });
});

Deno.test("anthropic e2e: strict chat.completions.stream helper with a tool call", async () => {
  await withGateway(async (_gw, fake, client) => {
    const stream = client.chat.completions.stream({
      model: "chat-tools",
      messages: [{ role: "user", content: "What is the weather like in San Francisco?" }],
      tools: [WEATHER_TOOL],
      tool_choice: "required",
      parallel_tool_calls: false,
    });
    const final = await stream.finalChatCompletion();
    const choice = final.choices[0];
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, "Okay, let's check the weather:");
    const call = choice.message.tool_calls![0];
    assert.equal(call.type, "function");
    if (call.type !== "function") return;
    assert.equal(call.id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(call.function.parsed_arguments, { location: "San Francisco, CA", unit: "fahrenheit" });
    assert.deepEqual(JSON.parse(call.function.arguments), {
      location: "San Francisco, CA",
      unit: "fahrenheit",
    });

    const sent = fake.requests.at(-1)!.body;
    assert.deepEqual(sent.tool_choice, { type: "any", disable_parallel_tool_use: true });
    assert.deepEqual(sent.tools, [{
      name: "get_weather",
      input_schema: WEATHER_TOOL.function.parameters,
      description: WEATHER_TOOL.function.description,
    }]);

    // The same answer without streaming.
    const whole = await client.chat.completions.create({
      model: "chat-tools",
      messages: [{ role: "user", content: "What is the weather like in San Francisco?" }],
      tools: [WEATHER_TOOL],
    });
    assert.equal(whole.choices[0].finish_reason, "tool_calls");
    const wholeCall = whole.choices[0].message.tool_calls![0];
    assert.ok(wholeCall.type === "function");
    assert.deepEqual(JSON.parse(wholeCall.function.arguments), {
      location: "San Francisco, CA",
      unit: "fahrenheit",
    });
  });
});

Deno.test("anthropic e2e: multi-turn with tool results reaches Anthropic as merged, alternating turns", async () => {
  await withGateway(async (_gw, fake, client) => {
    const answer = await client.chat.completions.create({
      model: "chat-ok",
      messages: [
        { role: "system", content: "You are a weather bot." },
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "toolu_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"location":"Paris"}' },
            },
            {
              id: "toolu_2",
              type: "function",
              function: { name: "get_weather", arguments: '{"location":"Rome"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "toolu_1", content: "18C" },
        { role: "tool", tool_call_id: "toolu_2", content: "24C" },
      ],
      tools: [WEATHER_TOOL],
    });
    assert.equal(answer.choices[0].message.content, FAKE_CLAUDE_ANSWER);
    assert.deepEqual(fake.requests.at(-1)!.body.messages, [
      { role: "user", content: "Weather in Paris and Rome?" },
      {
        role: "assistant",
        content: [
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } },
          { type: "tool_use", id: "toolu_2", name: "get_weather", input: { location: "Rome" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "18C" },
          { type: "tool_result", tool_use_id: "toolu_2", content: "24C" },
        ],
      },
    ]);
    assert.equal(fake.requests.at(-1)!.body.system, "You are a weather bot.");
  });
});

Deno.test("anthropic e2e: upstream errors become the SDK's error classes", async () => {
  await withGateway(async (_gw, _fake, client) => {
    const ask = (model: string) =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] });

    const auth = await ask("chat-badkey").catch((e) => e);
    assert.ok(auth instanceof OpenAI.AuthenticationError, String(auth));
    assert.equal(auth.status, 401);
    assert.ok(!auth.message.includes("sk-ant-wrong"), "the provider key never reaches the client");

    const limited = await ask("chat-429").catch((e) => e);
    assert.ok(limited instanceof OpenAI.RateLimitError, String(limited));
    assert.equal(limited.status, 429);
    assert.equal(limited.headers?.get("retry-after"), "7");

    const overloaded = await ask("chat-529").catch((e) => e);
    assert.ok(overloaded instanceof OpenAI.InternalServerError, String(overloaded));
    assert.equal(overloaded.status, 503);
    assert.equal(overloaded.code, "upstream_overloaded");

    const failed = await ask("chat-500").catch((e) => e);
    assert.ok(failed instanceof OpenAI.InternalServerError);
    assert.equal(failed.status, 502);

    const bad = await ask("chat-400").catch((e) => e);
    assert.ok(bad instanceof OpenAI.BadRequestError);
    assert.match(bad.message, /roles must alternate/);

    const unsupported = await client.chat.completions
      .create({ model: "chat-ok", messages: [{ role: "user", content: "x" }], n: 2 })
      .catch((e) => e);
    assert.ok(unsupported instanceof OpenAI.BadRequestError);
    assert.equal(unsupported.param, "n");
    assert.equal(unsupported.code, "unsupported_parameter");
  });
});

Deno.test("anthropic e2e: an error event mid-stream makes the SDK throw, not return a truncated answer", async () => {
  await withGateway(async (gw, _fake, client) => {
    const stream = await client.chat.completions.create({
      model: "chat-midstream-error",
      messages: [{ role: "user", content: "x" }],
      stream: true,
    });
    let text = "";
    const err = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    })().catch((e) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.match(err.message, /overloaded/i);
    assert.equal(text, "Partial");
    // The client sees the error event before the gateway has finished the request and logged it.
    const log = await waitForLog(gw, (l) => l.alias === "chat-midstream-error");
    assert.equal(log.error_code, "upstream_overloaded");
  });
});

const Greeting = z.object({ greeting: z.string(), words: z.array(z.string()), formal: z.boolean() });
const GREETING = { greeting: FAKE_CLAUDE_ANSWER, words: [FAKE_CLAUDE_ANSWER], formal: true };

Deno.test("anthropic e2e: chat.completions.parse with a zod response_format, whole and streamed", async () => {
  await withGateway(async (_gw, fake, client) => {
    const format = zodResponseFormat(Greeting, "greeting");
    const messages = [{ role: "user" as const, content: "Greet me." }];
    const parsed = await client.chat.completions.parse({
      model: "chat-ok",
      messages,
      response_format: format,
    });
    const choice = parsed.choices[0];
    assert.deepEqual(choice.message.parsed, GREETING);
    assert.equal(choice.finish_reason, "stop");
    assert.ok(!choice.message.tool_calls?.length, "the answer is content, not a tool call");
    // Anthropic was asked to call the answer tool, with the format's schema as its input schema.
    const sent = fake.requests.at(-1)!.body;
    assert.deepEqual(sent.tool_choice, { type: "tool", name: "json_response" });
    assert.deepEqual((sent.tools as { input_schema: unknown }[])[0].input_schema, format.json_schema.schema);

    const deltas: string[] = [];
    const stream = client.chat.completions.stream({ model: "chat-ok", messages, response_format: format });
    stream.on("content.delta", (e) => deltas.push(e.delta));
    const final = await stream.finalChatCompletion();
    assert.deepEqual(final.choices[0].message.parsed, GREETING);
    assert.equal(final.choices[0].finish_reason, "stop");
    assert.ok(deltas.length > 1, "the JSON was forwarded in the pieces Anthropic streamed");
    assert.deepEqual(JSON.parse(deltas.join("")), GREETING);
  });
});

Deno.test("anthropic e2e: response_format with tools, with reasoning_effort, and the reserved tool name", async () => {
  await withGateway(async (_gw, fake, client) => {
    const format = zodResponseFormat(Greeting, "greeting");
    const messages = [{ role: "user" as const, content: "Greet me." }];
    // The model may call the client's tool...
    const call = await client.chat.completions.create({
      model: "chat-tools",
      messages,
      tools: [WEATHER_TOOL],
      response_format: format,
    });
    assert.equal(call.choices[0].finish_reason, "tool_calls");
    assert.equal(
      call.choices[0].message.tool_calls![0].type === "function" &&
        call.choices[0].message.tool_calls![0].function.name,
      "get_weather",
    );
    assert.deepEqual(fake.requests.at(-1)!.body.tool_choice, { type: "any" });
    // ...or answer in the format.
    const answer = await client.chat.completions.parse({
      model: "chat-ok",
      messages,
      tools: [WEATHER_TOOL],
      response_format: format,
    });
    assert.deepEqual(answer.choices[0].message.parsed, GREETING);
    assert.equal(answer.choices[0].finish_reason, "stop");
    // Anthropic refuses thinking with a forced tool: the format wins, thinking is left off.
    const thought = await client.chat.completions.parse({
      model: "chat-ok",
      messages,
      response_format: format,
      reasoning_effort: "low",
    });
    assert.deepEqual(thought.choices[0].message.parsed, GREETING);
    assert.equal("thinking" in fake.requests.at(-1)!.body, false);
    // The answer tool's name is the gateway's.
    const reserved = await client.chat.completions.create({
      model: "chat-ok",
      messages,
      tools: [{ type: "function", function: { name: "json_response", parameters: { type: "object" } } }],
    }).then(() => undefined, (e) => e);
    assert.ok(reserved instanceof OpenAI.BadRequestError, `a 400, not ${reserved}`);
    assert.equal(reserved.param, "tools[0].function.name");
  });
});

Deno.test("anthropic e2e: reasoning_effort beside a forced tool or a temperature is refused by name, or dropped and named", async () => {
  await withGateway(async (_gw, fake, client) => {
    const messages = [{ role: "user" as const, content: "Weather in Paris?" }];
    const named = { type: "function" as const, function: { name: "get_weather" } };
    const refused = await client.chat.completions.create({
      model: "chat-ok",
      messages,
      tools: [WEATHER_TOOL],
      tool_choice: named,
      reasoning_effort: "low",
    }).then(() => undefined, (e: unknown) => e);
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.equal(refused.param, "reasoning_effort");
    assert.match(refused.message, /tool_choice/);
    assert.equal(fake.requests.length, 0);

    const { data, response } = await client.chat.completions.create({
      model: "chat-drop",
      messages,
      tools: [WEATHER_TOOL],
      tool_choice: named,
      reasoning_effort: "low",
    }).withResponse();
    assert.equal(data.choices[0].finish_reason, "tool_calls");
    assert.equal(response.headers.get("x-gateway-dropped"), "reasoning_effort");
    const sent = fake.requests.at(-1)!.body;
    assert.deepEqual(sent.tool_choice, { type: "tool", name: "get_weather" });
    assert.equal("thinking" in sent, false);

    const warm = await client.chat.completions.create({
      model: "chat-drop",
      messages,
      temperature: 0.2,
      reasoning_effort: "low",
    }).withResponse();
    assert.equal(warm.response.headers.get("x-gateway-dropped"), "reasoning_effort");
    assert.equal(fake.requests.at(-1)!.body.temperature, 0.2);
    assert.equal("thinking" in fake.requests.at(-1)!.body, false);
  });
});
