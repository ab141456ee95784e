/**
 * End to end with the official `openai` SDK through the gateway to a fake Gemini upstream: the client must
 * not be able to tell that Gemini answered — completions, streams (the strict stream helper with tool
 * calls included), embeddings in both encodings, and errors mapped to the SDK's error classes.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import {
  FAKE_GEMINI_KEY,
  FAKE_SIGNATURE,
  type FakeGemini,
  GEMINI_ANSWER,
  startFakeGemini,
} from "../helpers/fake_gemini.ts";
import { TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

function configFor(fake: FakeGemini): string {
  const chat = (alias: string, model: string, provider = "gem") =>
    `  ${alias}: { type: chat, targets: [ { provider: ${provider}, model: ${model} } ] }`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  gem: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  gem-badkey: { type: gemini, base_url: "${fake.baseURL}", api_key: "AIzaSy-wrong-key-000000000000" }
models:
${chat("chat-gem", "gem-ok")}
${chat("chat-gem-tools", "gem-tools")}
${chat("chat-gem-429", "gem-429")}
${chat("chat-gem-503", "gem-503")}
${chat("chat-gem-500", "gem-500")}
${chat("chat-gem-midstream", "gem-midstream-error")}
${chat("chat-gem-hang", "gem-hang")}
${chat("chat-gem-badkey", "gem-ok", "gem-badkey")}
  embed-gem: { type: embedding, targets: [ { provider: gem, model: gemini-embedding-001 } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeGemini, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakeGemini, configFor, fn);
}

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    },
  },
};

Deno.test("gemini e2e: chat.completions.create without streaming", async () => {
  await withGateway(async (_gw, fake, client) => {
    const { data, response } = await client.chat.completions.create({
      model: "chat-gem",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
      temperature: 0.2,
      max_tokens: 64,
      stop: ["END"],
    }).withResponse();
    assert.equal(data.object, "chat.completion");
    assert.equal(data.model, "chat-gem");
    assert.match(data.id, /^chatcmpl-/);
    assert.equal(data.choices[0].message.role, "assistant");
    assert.equal(data.choices[0].message.content, GEMINI_ANSWER);
    assert.equal(data.choices[0].finish_reason, "stop");
    assert.deepEqual(data.usage, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    assert.equal(response.headers.get("x-gateway-model"), "gem-ok");

    const sent = fake.requests.at(-1)!;
    assert.equal(sent.method, "generateContent");
    assert.equal(sent.headers.get("x-goog-api-key"), FAKE_GEMINI_KEY);
    assert.equal(new URL(sent.url).search, "", "the key never travels in the URL");
    assert.deepEqual(sent.body, {
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { temperature: 0.2, maxOutputTokens: 64, stopSequences: ["END"] },
    });
  });
});

Deno.test("gemini e2e: stream: true, with and without include_usage", async () => {
  await withGateway(async (gw, fake, client) => {
    const stream = await client.chat.completions.create({
      model: "chat-gem",
      messages: [{ role: "user", content: "stream please" }],
      stream: true,
    });
    let text = "";
    let finish: string | null = null;
    for await (const chunk of stream) {
      assert.equal(chunk.model, "chat-gem");
      assert.equal("usage" in chunk, false);
      text += chunk.choices[0].delta.content ?? "";
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    assert.equal(text, GEMINI_ANSWER);
    assert.equal(finish, "stop");
    assert.equal(new URL(fake.requests.at(-1)!.url).search, "?alt=sse");

    const withUsage = await client.chat.completions.create({
      model: "chat-gem",
      messages: [{ role: "user", content: "stream please" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let last;
    for await (const chunk of withUsage) last = chunk;
    assert.deepEqual(last?.choices, []);
    assert.deepEqual(last?.usage, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    const logged = gw.logs.filter((l) => l.msg === "request" && l.alias === "chat-gem");
    assert.ok(logged.every((l) => l.prompt_tokens === 11 && l.completion_tokens === 7));
  });
});

Deno.test("gemini e2e: strict stream helper with a tool call, then the tool result round trip", async () => {
  await withGateway(async (_gw, fake, client) => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "user", content: "Weather in Paris?" }];
    const final = await client.chat.completions
      .stream({ model: "chat-gem-tools", messages, tools: [WEATHER_TOOL] })
      .finalChatCompletion();
    assert.equal(final.model, "chat-gem-tools");
    assert.equal(final.choices[0].finish_reason, "tool_calls");
    const call = final.choices[0].message.tool_calls?.[0];
    assert.ok(call && call.type === "function");
    assert.match(call.id, /^call_[0-9a-f]{24}/);
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
    const declared = (fake.requests.at(-1)!.body.tools as { functionDeclarations: unknown[] }[])[0];
    assert.deepEqual(declared.functionDeclarations, [{
      name: "get_weather",
      description: "Weather for a city",
      parametersJsonSchema: WEATHER_TOOL.function.parameters,
    }]);

    // The client replays the assistant turn and answers the call; Gemini gets the signature back.
    messages.push(final.choices[0].message as OpenAI.ChatCompletionMessageParam);
    messages.push({ role: "tool", tool_call_id: call.id, content: '{"temperature":21,"sky":"clear"}' });
    const answer = await client.chat.completions.create({
      model: "chat-gem-tools",
      messages,
      tools: [WEATHER_TOOL],
    });
    assert.equal(answer.choices[0].message.content, "It is sunny in Paris.");
    assert.deepEqual(fake.requests.at(-1)!.body.contents, [
      { role: "user", parts: [{ text: "Weather in Paris?" }] },
      {
        role: "model",
        parts: [{
          functionCall: { name: "get_weather", args: { city: "Paris" } },
          thoughtSignature: FAKE_SIGNATURE,
        }],
      },
      {
        role: "user",
        parts: [{ functionResponse: { name: "get_weather", response: { temperature: 21, sky: "clear" } } }],
      },
    ]);

    const nonStream = await client.chat.completions.create({
      model: "chat-gem-tools",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [WEATHER_TOOL],
      tool_choice: "required",
    });
    assert.equal(nonStream.choices[0].finish_reason, "tool_calls");
    assert.equal(nonStream.choices[0].message.content, null);
    assert.deepEqual(fake.requests.at(-1)!.body.toolConfig, { functionCallingConfig: { mode: "ANY" } });
  });
});

Deno.test("gemini e2e: embeddings, default base64 and float, single and batch, with dimensions", async () => {
  await withGateway(async (_gw, fake, client) => {
    const single = await client.embeddings.create({ model: "embed-gem", input: "hello", dimensions: 4 });
    assert.equal(single.model, "embed-gem");
    // Google normalises only the full size: the cut vector [0.125, 0.1875, 0.25, 0.3125] is made unit length.
    const norm = Math.hypot(0.125, 0.1875, 0.25, 0.3125);
    single.data[0].embedding.forEach((v, i) => assert.ok(Math.abs(v - (0.125 + i * 0.0625) / norm) < 1e-7));
    // Gemini reports no counts: the answer shows the gateway's, the one the request is charged ("hello": 1).
    assert.deepEqual(single.usage, { prompt_tokens: 1, total_tokens: 1 });
    let sent = fake.requests.at(-1)!;
    assert.equal(sent.method, "embedContent");
    assert.equal(sent.model, "gemini-embedding-001");
    assert.deepEqual(sent.body, { content: { parts: [{ text: "hello" }] }, outputDimensionality: 4 });

    const batch = await client.embeddings.create({ model: "embed-gem", input: ["a", "b", "c"] });
    assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
    assert.deepEqual(batch.data[1].embedding, Array.from({ length: 8 }, (_, i) => 0.25 + i * 0.0625));
    sent = fake.requests.at(-1)!;
    assert.equal(sent.method, "batchEmbedContents");
    assert.deepEqual((sent.body.requests as unknown[])[0], {
      model: "models/gemini-embedding-001",
      content: { parts: [{ text: "a" }] },
    });

    const float = await client.embeddings.create({
      model: "embed-gem",
      input: ["x", "y"],
      encoding_format: "float",
      dimensions: 2,
    });
    [[0.125, 0.1875], [0.25, 0.3125]].forEach((cut, n) =>
      cut.forEach((x, i) => assert.ok(Math.abs(float.data[n].embedding[i] - x / Math.hypot(...cut)) < 1e-12))
    );

    await assert.rejects(
      client.embeddings.create({ model: "embed-gem", input: [1, 2, 3] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "input",
    );
  });
});

Deno.test("gemini e2e: errors map to the SDK's error classes", async () => {
  await withGateway(async (_gw, _fake, client) => {
    const ask = (model: string) =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] });
    await assert.rejects(ask("chat-gem-badkey"), (err: unknown) => {
      assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
      assert.equal(err.status, 401);
      assert.equal(err.message.includes("AIzaSy"), false);
      return true;
    });
    await assert.rejects(ask("chat-gem-429"), (err: unknown) => {
      assert.ok(err instanceof OpenAI.RateLimitError, String(err));
      assert.equal(err.headers?.get("retry-after"), "7");
      return true;
    });
    await assert.rejects(ask("chat-gem-503"), (err: unknown) => {
      assert.ok(err instanceof OpenAI.InternalServerError, String(err));
      assert.equal(err.status, 503);
      return true;
    });
    await assert.rejects(ask("chat-gem-500"), (err: unknown) => {
      assert.ok(err instanceof OpenAI.InternalServerError, String(err));
      assert.equal(err.status, 502);
      return true;
    });
    await assert.rejects(
      client.chat.completions.create({
        model: "chat-gem",
        messages: [{ role: "user", content: "x" }],
        logit_bias: { "1": 5 },
      }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "logit_bias",
    );
    const stream = await client.chat.completions.create({
      model: "chat-gem-midstream",
      messages: [{ role: "user", content: "x" }],
      stream: true,
    });
    await assert.rejects(async () => {
      for await (const _ of stream) { /* drain */ }
    }, (err: unknown) => err instanceof OpenAI.APIError && /Internal error encountered/.test(err.message));
  });
});

Deno.test("gemini e2e: a client abort cancels the upstream stream", async () => {
  await withGateway(async (_gw, fake, client) => {
    const abort = new AbortController();
    const stream = await client.chat.completions.create({
      model: "chat-gem-hang",
      messages: [{ role: "user", content: "x" }],
      stream: true,
    }, { signal: abort.signal });
    const iterator = stream[Symbol.asyncIterator]();
    assert.equal((await iterator.next()).value?.choices[0].delta.role, "assistant");
    assert.equal((await iterator.next()).value?.choices[0].delta.content, "waiting");
    abort.abort();
    await Promise.race([
      fake.aborted.promise,
      new Promise((_, reject) => setTimeout(() => reject(new Error("upstream was not aborted")), 2_000)),
    ]);
  });
});
