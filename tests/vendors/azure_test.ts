/**
 * End to end with the official `openai` SDK through the gateway to a fake Azure OpenAI resource, for both
 * addressing forms (classic deployments + api-version, and the v1 API): completions, streams (with Azure's
 * annotation-only chunks), the strict stream helper with tool calls, embeddings, and Azure's errors.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { parseConfigText } from "../../lib/config/load.ts";
import { createProviders, ProviderSetupError } from "../../lib/providers/registry.ts";
import {
  FAKE_AZURE_ANSWER,
  FAKE_AZURE_API_VERSION,
  FAKE_AZURE_KEY,
  type FakeAzure,
  startFakeAzure,
} from "../helpers/fake_azure.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

type Form = "classic" | "v1";

function providerYaml(fake: FakeAzure, form: Form, key: string): string {
  return form === "classic"
    ? `{ type: azure, base_url: "${fake.endpoint}", api_key: "${key}", api_version: "${FAKE_AZURE_API_VERSION}" }`
    : `{ type: azure, base_url: "${fake.v1BaseURL}", api_key: "${key}" }`;
}

function configFor(fake: FakeAzure, form: Form): string {
  const chat = (alias: string, provider: string, deployment: string) =>
    `  ${alias}: { type: chat, targets: [ { provider: ${provider}, model: ${deployment} } ] }`;
  return `
providers:
  az: ${providerYaml(fake, form, FAKE_AZURE_KEY)}
  az-badkey: ${providerYaml(fake, form, "wrong-key-0123456789abcdef")}
models:
${chat("chat-az", "az", "gpt-4o")}
${chat("chat-az-tools", "az", "gpt-4o-tools")}
${chat("chat-az-filtered", "az", "gpt-4o-filtered")}
${chat("chat-az-429", "az", "gpt-4o-429")}
${chat("chat-az-503", "az", "gpt-4o-503")}
${chat("chat-az-missing", "az", "no-such-deployment")}
${chat("chat-az-badkey", "az-badkey", "gpt-4o")}
  embed-az: { type: embedding, targets: [ { provider: az, model: text-embedding-3-small } ] }
${TEST_TOKENS_YAML}`;
}

async function withAzure(form: Form, fn: (client: OpenAI, fake: FakeAzure) => Promise<void>) {
  const fake = startFakeAzure();
  const gw = await startGateway(configFor(fake, form));
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
  try {
    await fn(client, fake);
  } finally {
    await gw.stop();
    await fake.stop();
  }
}

/** Checks the last upstream request: addressing form, api-version, key header, deployment. */
function assertAddressed(fake: FakeAzure, form: Form, deployment: string, operation: string) {
  const sent = fake.requests.at(-1)!;
  assert.equal(sent.form, form);
  assert.equal(sent.deployment, deployment);
  assert.equal(sent.body.model, deployment, "the body's model is the deployment in both forms");
  assert.equal(sent.headers.get("api-key"), FAKE_AZURE_KEY);
  assert.equal(sent.headers.get("authorization"), null);
  if (form === "classic") {
    assert.equal(sent.path, `/openai/deployments/${deployment}/${operation}`);
    assert.equal(sent.apiVersion, FAKE_AZURE_API_VERSION);
  } else {
    assert.equal(sent.path, `/openai/v1/${operation}`);
    assert.equal(sent.apiVersion, null);
  }
}

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

/** Azure's extra fields, which the SDK's types do not declare. */
type Annotated = { prompt_filter_results?: { prompt_index: number }[] };
type ChoiceAnnotated = { content_filter_results?: Record<string, unknown> };

for (const form of ["classic", "v1"] as const) {
  Deno.test(`azure ${form}: chat.completions.create keeps the content-filter annotations`, async () => {
    await withAzure(form, async (client, fake) => {
      const { data, response } = await client.chat.completions
        .create({ model: "chat-az", messages: [{ role: "user", content: "Hi" }], temperature: 0.3 })
        .withResponse();
      assert.equal(data.model, "chat-az");
      assert.equal(data.choices[0].message.content, FAKE_AZURE_ANSWER);
      assert.equal(data.choices[0].finish_reason, "stop");
      assert.equal(data.usage?.total_tokens, 22);
      assert.equal((data as unknown as Annotated).prompt_filter_results?.[0].prompt_index, 0);
      const choice = data.choices[0] as unknown as ChoiceAnnotated;
      assert.deepEqual(choice.content_filter_results?.violence, { filtered: false, severity: "safe" });
      assert.equal(response.headers.get("x-gateway-provider"), "az");
      assert.equal(response.headers.get("x-gateway-model"), "gpt-4o");
      assertAddressed(fake, form, "gpt-4o", "chat/completions");
      assert.equal(fake.requests.at(-1)!.body.temperature, 0.3);
    });
  });

  Deno.test(`azure ${form}: streams are OpenAI-shaped, annotations kept, usage only when asked`, async () => {
    await withAzure(form, async (client, fake) => {
      const stream = await client.chat.completions.create({
        model: "chat-az",
        messages: [{ role: "user", content: "stream please" }],
        stream: true,
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      assertAddressed(fake, form, "gpt-4o", "chat/completions");
      assert.deepEqual(
        fake.requests.at(-1)!.body.stream_options,
        { include_usage: true },
        "the gateway asks",
      );
      for (const chunk of chunks) {
        assert.ok(chunk.choices.length > 0, "no empty-choices chunk reaches the client");
        assert.equal(chunk.object, "chat.completion.chunk");
        assert.equal(chunk.model, "chat-az");
        assert.equal(chunk.id, "chatcmpl-AzureFake9876543210");
        assert.equal("usage" in chunk, false);
      }
      const first = chunks[0] as unknown as Annotated;
      assert.equal(
        first.prompt_filter_results?.[0].prompt_index,
        0,
        "prompt annotations ride the first chunk",
      );
      assert.equal(chunks[0].choices[0].delta.role, "assistant");
      assert.equal(chunks.map((c) => c.choices[0].delta.content ?? "").join(""), FAKE_AZURE_ANSWER);
      assert.ok(chunks.some((c) => c.choices[0].finish_reason === "stop"));
      const last = chunks.at(-1)!.choices[0] as unknown as ChoiceAnnotated & { delta: unknown };
      assert.deepEqual(last.delta, {}, "the post-finish annotation gets an empty delta");
      assert.ok(last.content_filter_results);

      const withUsage = await client.chat.completions.create({
        model: "chat-az",
        messages: [{ role: "user", content: "stream please" }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let lastChunk;
      for await (const chunk of withUsage) lastChunk = chunk;
      assert.deepEqual(lastChunk?.choices, []);
      assert.equal(lastChunk?.usage?.total_tokens, 22);
    });
  });

  Deno.test(`azure ${form}: the strict chat.completions.stream helper, tool calls included`, async () => {
    await withAzure(form, async (client) => {
      const final = await client.chat.completions.stream({
        model: "chat-az-tools",
        messages: [{ role: "user", content: "Weather in Paris?" }],
        tools: [WEATHER_TOOL],
      }).finalChatCompletion();
      assert.equal(final.model, "chat-az-tools");
      assert.equal(final.id, "chatcmpl-AzureFake9876543210");
      assert.equal(final.choices[0].finish_reason, "tool_calls");
      const call = final.choices[0].message.tool_calls?.[0];
      assert.ok(call && call.type === "function");
      assert.equal(call.id, "call_az1");
      assert.equal(call.function.name, "get_weather");
      assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
      assert.equal((final as unknown as Annotated).prompt_filter_results?.[0].prompt_index, 0);

      const text = await client.chat.completions
        .stream({ model: "chat-az", messages: [{ role: "user", content: "hi" }] })
        .finalContent();
      assert.equal(text, FAKE_AZURE_ANSWER);
    });
  });

  Deno.test(`azure ${form}: embeddings, base64 by default and float`, async () => {
    await withAzure(form, async (client, fake) => {
      const viaBase64 = await client.embeddings.create({ model: "embed-az", input: ["a", "b"] });
      assertAddressed(fake, form, "text-embedding-3-small", "embeddings");
      // The client's base64 is asked for: Azure serves it, at well under half the size of float JSON.
      assert.equal(fake.requests.at(-1)!.body.encoding_format, "base64");
      assert.equal(viaBase64.model, "embed-az");
      assert.deepEqual(viaBase64.data[1].embedding, Array.from({ length: 8 }, (_, i) => 0.25 + i * 0.0625));
      assert.deepEqual(viaBase64.usage, { prompt_tokens: 4, total_tokens: 4 });

      const viaFloat = await client.embeddings.create({
        model: "embed-az",
        input: "a",
        encoding_format: "float",
        dimensions: 4,
      });
      assert.deepEqual(viaFloat.data[0].embedding, [0.125, 0.1875, 0.25, 0.3125]);
      assert.equal(fake.requests.at(-1)!.body.dimensions, 4);
      assert.equal(fake.requests.at(-1)!.body.encoding_format, "float");
    });
  });

  Deno.test(`azure ${form}: content filter, auth, rate limit, overload and missing deployment errors`, async () => {
    await withAzure(form, async (client) => {
      const ask = (model: string) =>
        client.chat.completions.create({ model, messages: [{ role: "user", content: "x" }] });
      await assert.rejects(ask("chat-az-filtered"), (err: unknown) => {
        assert.ok(err instanceof OpenAI.BadRequestError);
        assert.equal(err.code, "content_filter");
        assert.equal(err.param, "prompt");
        assert.match(err.message, /^400 The response was filtered .*\(filtered: violence \(high\)\)$/);
        return true;
      });
      await assert.rejects(ask("chat-az-badkey"), (err: unknown) => {
        assert.ok(err instanceof OpenAI.AuthenticationError);
        assert.equal(err.code, "upstream_auth_error");
        assert.ok(!err.message.includes("wrong-key"), "nothing of the provider key reaches the client");
        return true;
      });
      await assert.rejects(ask("chat-az-429"), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.equal(err.code, "rate_limit_exceeded");
        assert.equal(err.headers?.get("retry-after"), "1");
        return true;
      });
      await assert.rejects(ask("chat-az-503"), (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 503);
        return true;
      });
      await assert.rejects(ask("chat-az-missing"), (err: unknown) => {
        assert.ok(err instanceof OpenAI.NotFoundError);
        assert.equal(err.code, "DeploymentNotFound");
        return true;
      });
      // The same errors on a stream request arrive before any byte is sent, so they are plain HTTP errors too.
      await assert.rejects(
        client.chat.completions.create({
          model: "chat-az-filtered",
          messages: [{ role: "user", content: "x" }],
          stream: true,
        }),
        OpenAI.BadRequestError,
      );
    });
  });
}

Deno.test("azure config: neither api_version nor a /openai/v1 base_url is a config issue naming the provider", () => {
  const yaml = `
providers:
  az-bad: { type: azure, base_url: "https://contoso.openai.azure.com", api_key: "k" }
models:
  chat-x: { type: chat, targets: [ { provider: az-bad, model: gpt-4o } ] }
${TEST_TOKENS_YAML}`;
  const result = parseConfigText(yaml, { source: "<test>", env: {} });
  assert.ok(result.ok, JSON.stringify(!result.ok && result.issues));
  assert.throws(() => createProviders(result.config.providers), (err: unknown) => {
    assert.ok(err instanceof ProviderSetupError);
    assert.equal(err.provider, "az-bad");
    assert.match(err.message, /api_version/);
    return true;
  });
});
