/**
 * End to end with the official `openai` SDK, the client our users run, against a gateway listening on a
 * real socket: through a fake OpenAI-compatible upstream and through the builtin provider.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { NARROW_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLogCount } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

function configFor(fake: FakeUpstream): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fake: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
  chat-tools: { type: chat, targets: [ { provider: fake, model: gpt-tools } ] }
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  embed-fake: { type: embedding, targets: [ { provider: fake, model: emb-ok } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeUpstream, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakeOpenAI, configFor, fn);
}

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

Deno.test("sdk: models.list shows exactly the aliases the token may use", async () => {
  await withGateway(async (gw, _fake, client) => {
    const all = [];
    for await (const model of client.models.list()) all.push(model);
    assert.deepEqual(all.map((m) => m.id), [
      "chat-fake",
      "chat-tools",
      "chat-echo",
      "embed-fake",
      "embed-local",
    ]);
    for (const model of all) {
      assert.equal(model.object, "model");
      assert.equal(typeof model.created, "number");
      assert.equal(typeof model.owned_by, "string");
    }
    const narrow = new OpenAI({ apiKey: NARROW_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
    const some = [];
    for await (const model of narrow.models.list()) some.push(model.id);
    assert.deepEqual(some, ["chat-fake", "chat-tools", "chat-echo"]);
    const one = await client.models.retrieve("embed-local");
    assert.equal(one.id, "embed-local");
    await assert.rejects(narrow.models.retrieve("embed-local"), OpenAI.NotFoundError);
  });
});

Deno.test("sdk: chat.completions.create without streaming, via fake upstream and builtin", async () => {
  await withGateway(async (_gw, fake, client) => {
    const { data, response } = await client.chat.completions
      .create({ model: "chat-fake", messages: [{ role: "user", content: "Hi" }], temperature: 0.2 })
      .withResponse();
    assert.equal(data.object, "chat.completion");
    assert.equal(data.model, "chat-fake");
    assert.equal(data.choices[0].message.content, FAKE_ANSWER);
    assert.equal(data.usage?.total_tokens, 18);
    assert.equal(response.headers.get("x-gateway-provider"), "fake");
    assert.equal(response.headers.get("x-gateway-model"), "gpt-ok");
    assert.match(response.headers.get("x-request-id") ?? "", /^req_[0-9a-f]{32}$/);
    // Parameters pass through unchanged, with the upstream model substituted.
    const sent = fake.requests.at(-1)!;
    assert.equal(sent.body.model, "gpt-ok");
    assert.equal(sent.body.temperature, 0.2);
    assert.equal(sent.headers.get("authorization"), `Bearer ${FAKE_KEY}`);

    const echo = await client.chat.completions.create({
      model: "chat-echo",
      messages: [{ role: "system", content: "Be brief." }, {
        role: "user",
        content: "Say this back, please.",
      }],
    });
    assert.equal(echo.model, "chat-echo");
    assert.equal(echo.choices[0].message.content, "Say this back, please.");
    assert.equal(echo.choices[0].finish_reason, "stop");
    assert.ok(echo.usage && echo.usage.completion_tokens > 0);
    assert.equal(echo.usage.total_tokens, echo.usage.prompt_tokens + echo.usage.completion_tokens);
  });
});

Deno.test("sdk: chat.completions.create with stream: true, with and without include_usage", async () => {
  await withGateway(async (gw, _fake, client) => {
    for (const model of ["chat-fake", "chat-echo"]) {
      const expected = model === "chat-fake" ? FAKE_ANSWER : "stream me back";
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "stream me back" }],
        stream: true,
      });
      let text = "";
      let chunks = 0;
      let finish: string | null = null;
      for await (const chunk of stream) {
        chunks++;
        assert.equal(chunk.model, model);
        assert.equal(chunk.object, "chat.completion.chunk");
        assert.equal("usage" in chunk, false, "usage was not asked for, so no chunk carries it");
        assert.ok(chunk.choices.length > 0, "the gateway's own usage chunk is removed");
        text += chunk.choices[0].delta.content ?? "";
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      assert.equal(text, expected);
      assert.equal(finish, "stop");
      assert.ok(chunks >= 3);

      const withUsage = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "stream me back" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let last;
      for await (const chunk of withUsage) last = chunk;
      assert.deepEqual(last?.choices, []);
      assert.ok(last?.usage && last.usage.total_tokens > 0);
    }
    // The access log counted the stream's tokens even when the client did not ask for usage.
    const isStream = (l: Record<string, unknown>) => l.msg === "request" && l.stream === true;
    // Against GATEWAY_BIN the log lines arrive over a pipe, a moment after the streams end.
    const streamed = await waitForLogCount(gw, isStream, 4, 10_000);
    assert.equal(streamed.length, 4);
    for (const line of streamed) {
      assert.equal(line.status, 200);
      assert.ok(Number(line.prompt_tokens) > 0 && Number(line.completion_tokens) > 0);
    }
  });
});

Deno.test("sdk: the strict chat.completions.stream helper accepts the gateway's streams, tool calls included", async () => {
  await withGateway(async (_gw, _fake, client) => {
    const runner = client.chat.completions.stream({
      model: "chat-tools",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [WEATHER_TOOL],
    });
    const final = await runner.finalChatCompletion();
    assert.equal(final.model, "chat-tools");
    assert.equal(final.choices[0].finish_reason, "tool_calls");
    const call = final.choices[0].message.tool_calls?.[0];
    assert.ok(call && call.type === "function");
    assert.equal(call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });

    for (const model of ["chat-fake", "chat-echo"]) {
      const text = await client.chat.completions
        .stream({ model, messages: [{ role: "user", content: "helper says hi" }] })
        .finalContent();
      assert.equal(text, model === "chat-fake" ? FAKE_ANSWER : "helper says hi");
    }
  });
});

Deno.test("sdk: embeddings.create with the default (base64) and with float encoding", async () => {
  await withGateway(async (_gw, fake, client) => {
    const viaBase64 = await client.embeddings.create({ model: "embed-fake", input: ["a", "b"] });
    assert.equal(fake.requests.at(-1)!.body.encoding_format, "base64");
    assert.equal(viaBase64.model, "embed-fake");
    assert.equal(viaBase64.data.length, 2);
    // The fake's vectors are exact in float32, so the base64 round trip must reproduce them exactly.
    assert.deepEqual(viaBase64.data[1].embedding, Array.from({ length: 8 }, (_, i) => 0.25 + i * 0.0625));
    assert.deepEqual(viaBase64.usage, { prompt_tokens: 5, total_tokens: 5 });

    const viaFloat = await client.embeddings.create({
      model: "embed-fake",
      input: "a",
      encoding_format: "float",
      dimensions: 4,
    });
    assert.deepEqual(viaFloat.data[0].embedding, [0.125, 0.1875, 0.25, 0.3125]);
    assert.equal(fake.requests.at(-1)!.body.dimensions, 4);
    assert.equal(fake.requests.at(-1)!.body.encoding_format, "float");

    const local64 = await client.embeddings.create({
      model: "embed-local",
      input: "the cat sat",
      dimensions: 64,
    });
    const localFloat = await client.embeddings.create({
      model: "embed-local",
      input: "the cat sat",
      dimensions: 64,
      encoding_format: "float",
    });
    assert.equal(local64.data[0].embedding.length, 64);
    const norm = Math.hypot(...localFloat.data[0].embedding);
    assert.ok(Math.abs(norm - 1) < 1e-6);
    local64.data[0].embedding.forEach((v, i) =>
      assert.ok(Math.abs(v - localFloat.data[0].embedding[i]) < 1e-6)
    );
  });
});

Deno.test("sdk: bad token raises AuthenticationError; unknown and forbidden aliases raise NotFoundError", async () => {
  await withGateway(async (gw, _fake, client) => {
    const stranger = new OpenAI({ apiKey: "gw-not-a-real-token", baseURL: gw.baseURL, maxRetries: 0 });
    await assert.rejects(
      stranger.chat.completions.create({ model: "chat-fake", messages: [{ role: "user", content: "x" }] }),
      (err: unknown) => {
        assert.ok(err instanceof OpenAI.AuthenticationError);
        assert.equal(err.status, 401);
        assert.equal(err.code, "invalid_api_key");
        assert.ok(!err.message.includes("gw-not-a-real-token"), "the token is never echoed");
        return true;
      },
    );
    await assert.rejects(stranger.models.list(), OpenAI.AuthenticationError);
    await assert.rejects(
      client.chat.completions.create({ model: "no-such-alias", messages: [{ role: "user", content: "x" }] }),
      (err: unknown) => err instanceof OpenAI.NotFoundError && err.code === "model_not_found",
    );
    const narrow = new OpenAI({ apiKey: NARROW_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
    await assert.rejects(narrow.embeddings.create({ model: "embed-local", input: "x" }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.NotFoundError);
      assert.equal(err.code, "model_not_found");
      assert.equal(
        err.message,
        "404 The model `embed-local` does not exist or you do not have access to it.",
      );
      return true;
    });
    await assert.rejects(
      client.chat.completions.create({ model: "embed-local", messages: [{ role: "user", content: "x" }] }),
      OpenAI.BadRequestError,
    );
  });
});
