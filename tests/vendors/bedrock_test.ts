/**
 * End to end with the official `openai` SDK through the gateway to a fake Bedrock runtime that verifies every
 * SigV4 signature and speaks Converse JSON, ConverseStream's binary event-stream and InvokeModel.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { parseConfigText } from "../../lib/config/load.ts";
import { createProviders, ProviderSetupError } from "../../lib/providers/registry.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_REGION,
  FAKE_TOOL_USE_ID,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { zodResponseFormat } from "openai/helpers/zod";
import { z } from "zod";

const CLAUDE = "anthropic.claude-3-5-sonnet-20240620-v1:0";

function configFor(fake: FakeBedrock): string {
  const target = (provider: string, model: string) =>
    `{ type: chat, targets: [{ provider: ${provider}, model: "${model}" }] }`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fake.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
  aws-env: { type: bedrock, base_url: "${fake.url}" }
  aws-drop:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fake.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
    unsupported_params: drop
  aws-wrong:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fake.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "not-the-right-secret-key-0000000000000"
  aws-unknown:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fake.url}"
    access_key_id: AKIDUNKNOWN000000000
    secret_access_key: "whatever-secret-key-000000000000000000"
models:
  chat-claude: ${target("aws", CLAUDE)}
  chat-env: ${target("aws-env", CLAUDE)}
  chat-claude-drop: ${target("aws-drop", CLAUDE)}
  chat-tools: ${target("aws", "us.tools-model-v1:0")}
  chat-throttle: ${target("aws", "throttle-v1:0")}
  chat-quota:
    type: chat
    targets: [{ provider: aws, model: "amazon.nova-quota-v1:0" }, { provider: aws, model: "${CLAUDE}" }]
  claude-quota:
    type: chat
    targets: [{ provider: aws, model: "anthropic.claude-quota-v1:0" }, { provider: aws, model: "${CLAUDE}" }]
  chat-overload: ${target("aws", "overload-v1:0")}
  chat-denied: ${target("aws", "denied-v1:0")}
  chat-midstream: ${target("aws", "midstream-v1:0")}
  chat-badcrc: ${target("aws", "badcrc-v1:0")}
  chat-wrongkey: ${target("aws-wrong", CLAUDE)}
  chat-unknownkey: ${target("aws-unknown", CLAUDE)}
  embed-titan: { type: embedding, targets: [{ provider: aws, model: "amazon.titan-embed-text-v2:0" }] }
  embed-cohere: { type: embedding, targets: [{ provider: aws, model: "cohere.embed-english-v3" }] }
  embed-unknown: { type: embedding, targets: [{ provider: aws, model: "acme.embed-v1:0" }] }
${TEST_TOKENS_YAML}`;
}

const ENV = {
  AWS_REGION: FAKE_REGION,
  AWS_ACCESS_KEY_ID: FAKE_AWS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: FAKE_AWS.secretAccessKey,
  AWS_SESSION_TOKEN: "FwoGZXIvYXdzEFAKESESSIONTOKEN//////////example==",
};

function withGateway(fn: (client: OpenAI, fake: FakeBedrock, gw: TestGateway) => Promise<void>) {
  return withFakeGateway(startFakeBedrock, configFor, (gw, fake, client) => fn(client, fake, gw), ENV);
}

const WEATHER_TOOL = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

Deno.test("bedrock e2e: chat.completions.create, non-stream, signed and translated", async () => {
  await withGateway(async (client, fake) => {
    const completion = await client.chat.completions.create({
      model: "chat-claude",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hello?" }],
      max_tokens: 50,
      temperature: 0.2,
      // Claude refuses a blank stop sequence (`lib/providers/shared/claude_stop.ts`): one with text is sent.
      stop: ["\n\nQ:"],
    });
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, "chat-claude");
    assert.equal(completion.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    assert.equal(completion.choices[0].finish_reason, "stop");
    assert.deepEqual(completion.usage, { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 });
    const [req] = fake.requests;
    assert.equal(req.signatureValid, true);
    assert.equal(req.action, "converse");
    assert.equal(req.modelId, CLAUDE);
    assert.equal(req.rawPath, "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse");
    assert.equal(req.headers.get("x-amz-security-token"), null);
    assert.deepEqual(req.body, {
      messages: [{ role: "user", content: [{ text: "Hello?" }] }],
      system: [{ text: "Be brief." }],
      inferenceConfig: { maxTokens: 50, temperature: 0.2, stopSequences: ["\n\nQ:"] },
    });
  });
});

Deno.test("bedrock e2e: credentials and region from the environment, with a session token", async () => {
  await withGateway(async (client, fake) => {
    const completion = await client.chat.completions.create({
      model: "chat-env",
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(completion.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    const [req] = fake.requests;
    assert.equal(req.signatureValid, true);
    assert.equal(req.headers.get("x-amz-security-token"), ENV.AWS_SESSION_TOKEN);
    assert.match(
      req.headers.get("authorization")!,
      /SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,/,
    );
  });
});

Deno.test("bedrock e2e: streaming text through the binary event-stream", async () => {
  await withGateway(async (client) => {
    const stream = await client.chat.completions.create({
      model: "chat-claude",
      messages: [{ role: "user", content: "Hello?" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    const finishes: (string | null)[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      if (chunk.usage) usage = chunk.usage;
      assert.equal(chunk.model, "chat-claude");
    }
    assert.equal(text, FAKE_BEDROCK_ANSWER);
    assert.deepEqual(finishes, ["stop"]);
    assert.deepEqual(usage, { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 });
  });
});

Deno.test("bedrock e2e: the strict stream helper with a tool call, then the tool result turn", async () => {
  await withGateway(async (client, fake) => {
    const runner = client.chat.completions.stream({
      model: "chat-tools",
      messages: [{ role: "user", content: "Weather in Paris?" }],
      tools: [WEATHER_TOOL],
      tool_choice: "required",
    });
    const final = await runner.finalChatCompletion();
    const choice = final.choices[0];
    assert.equal(choice.finish_reason, "tool_calls");
    assert.equal(choice.message.content, "Let me check.");
    assert.deepEqual(choice.message.tool_calls, [{
      id: FAKE_TOOL_USE_ID,
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    }]);
    assert.deepEqual(fake.requests[0].body.toolConfig, {
      tools: [{
        toolSpec: {
          name: "get_weather",
          description: "Weather for a city",
          inputSchema: { json: WEATHER_TOOL.function.parameters },
        },
      }],
      toolChoice: { any: {} },
    });
    assert.equal(fake.requests[0].action, "converse-stream");
    assert.equal(fake.requests[0].rawPath, "/model/us.tools-model-v1%3A0/converse-stream");

    const second = await client.chat.completions.create({
      model: "chat-claude",
      messages: [
        { role: "user", content: "Weather in Paris?" },
        choice.message as OpenAI.ChatCompletionMessageParam,
        { role: "tool", tool_call_id: FAKE_TOOL_USE_ID, content: "18°C, sunny" },
      ],
      tools: [WEATHER_TOOL],
    });
    assert.equal(second.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    assert.deepEqual(fake.requests[1].body.messages, [
      { role: "user", content: [{ text: "Weather in Paris?" }] },
      {
        role: "assistant",
        content: [{ text: "Let me check." }, {
          toolUse: { toolUseId: FAKE_TOOL_USE_ID, name: "get_weather", input: { city: "Paris" } },
        }],
      },
      {
        role: "user",
        content: [{
          toolResult: { toolUseId: FAKE_TOOL_USE_ID, content: [{ text: "18°C, sunny" }], status: "success" },
        }],
      },
    ]);
  });
});

Deno.test("bedrock e2e: embeddings with Titan and Cohere, base64 default and float", async () => {
  await withGateway(async (client, fake) => {
    const titan = await client.embeddings.create({ model: "embed-titan", input: ["one two", "three"] });
    assert.equal(titan.data.length, 2);
    assert.equal(titan.data[0].embedding.length, 1024);
    assert.deepEqual(titan.usage, { prompt_tokens: 3, total_tokens: 3 });
    const small = await client.embeddings.create({
      model: "embed-titan",
      input: "hello",
      dimensions: 256,
      encoding_format: "float",
    });
    assert.equal(small.data[0].embedding.length, 256);
    const titanBodies = fake.requests.filter((r) => r.action === "invoke").map((r) => r.body);
    assert.deepEqual(titanBodies.at(-1), { inputText: "hello", normalize: true, dimensions: 256 });
    assert.ok(fake.requests.every((r) => r.signatureValid));
    assert.equal(fake.requests[0].rawPath, "/model/amazon.titan-embed-text-v2%3A0/invoke");

    const cohere = await client.embeddings.create({ model: "embed-cohere", input: ["a b", "c"] });
    assert.equal(cohere.data.length, 2);
    assert.equal(cohere.data[1].embedding.length, 1024);
    assert.deepEqual(cohere.usage, { prompt_tokens: 3, total_tokens: 3 });
    assert.deepEqual(fake.requests.at(-1)!.body, { texts: ["a b", "c"], input_type: "search_document" });
    const float = await client.embeddings.create({
      model: "embed-cohere",
      input: "c",
      encoding_format: "float",
    });
    assert.deepEqual(float.data[0].embedding.map((x) => Math.fround(x)), cohere.data[1].embedding);

    await assert.rejects(
      client.embeddings.create({ model: "embed-cohere", input: "x", dimensions: 256 }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "dimensions",
    );
    await assert.rejects(
      client.embeddings.create({ model: "embed-titan", input: [[1, 2, 3]] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && err.param === "input",
    );
    await assert.rejects(
      client.embeddings.create({ model: "embed-unknown", input: "x" }),
      (err: unknown) => err instanceof OpenAI.BadRequestError,
    );
  });
});

Deno.test("bedrock e2e: a wrong secret or unknown key id → AuthenticationError, nothing of the key leaks", async () => {
  await withGateway(async (client, fake) => {
    for (const model of ["chat-wrongkey", "chat-unknownkey"]) {
      const err = await client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }] })
        .then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof OpenAI.AuthenticationError, String(err));
      assert.equal(err.status, 401);
      assert.doesNotMatch(err.message, /not-the-right|whatever-secret/);
    }
    assert.deepEqual(fake.requests.map((r) => r.signatureValid), [false, false]);
  });
});

Deno.test("bedrock e2e: throttling → RateLimitError, overload → 503, access denied → 403", async () => {
  await withGateway(async (client) => {
    const ask = (model: string) =>
      client.chat.completions.create({ model, messages: [{ role: "user", content: "Hi" }] }).then(
        () => undefined,
        (e: unknown) => e,
      );
    const throttled = await ask("chat-throttle");
    assert.ok(throttled instanceof OpenAI.RateLimitError, String(throttled));
    const overloaded = await ask("chat-overload");
    assert.ok(overloaded instanceof OpenAI.InternalServerError, String(overloaded));
    assert.equal(overloaded.status, 503);
    const denied = await ask("chat-denied");
    assert.ok(denied instanceof OpenAI.PermissionDeniedError, String(denied));
  });
});

Deno.test("bedrock e2e: ServiceQuotaExceededException (a 400) is retried, then the next target answers", async () => {
  await withGateway(async (client, fake, gw) => {
    const completion = await client.chat.completions.create({
      model: "chat-quota",
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(completion.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    assert.deepEqual(fake.requests.map((r) => r.modelId), [
      "amazon.nova-quota-v1:0",
      "amazon.nova-quota-v1:0",
      CLAUDE,
    ]);

    // The Messages API to Claude models goes through InvokeModel natively: the same error, the same fallback.
    fake.requests.length = 0;
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify({
        model: "claude-quota",
        max_tokens: 10,
        messages: [{ role: "user", content: "Hi" }],
      }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).type, "message");
    assert.deepEqual(fake.requests.map((r) => [r.modelId, r.action]), [
      ["anthropic.claude-quota-v1:0", "invoke"],
      ["anthropic.claude-quota-v1:0", "invoke"],
      [CLAUDE, "invoke"],
    ]);
  });
});

Deno.test("bedrock e2e: a mid-stream exception frame or a bad CRC makes the SDK stream raise APIError", async () => {
  await withGateway(async (client) => {
    for (const model of ["chat-midstream", "chat-badcrc"]) {
      const stream = await client.chat.completions.create({
        model,
        messages: [{ role: "user", content: "Hi" }],
        stream: true,
      });
      let text = "";
      const err = await (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      })().then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof OpenAI.APIError, `${model}: ${err}`);
      assert.ok(text.startsWith("Hello"), `${model}: ${text}`);
    }
  });
});

Deno.test("bedrock: no credentials in config or environment fails provider setup", () => {
  const yaml = `
providers:
  aws: { type: bedrock, region: us-east-1 }
models:
  chat-x: { type: chat, targets: [{ provider: aws, model: m }] }
${TEST_TOKENS_YAML}`;
  const result = parseConfigText(yaml, { source: "<test>", env: {} });
  assert.ok(result.ok, JSON.stringify(result));
  assert.throws(
    () => createProviders(result.config.providers, {}),
    (err: unknown) =>
      err instanceof ProviderSetupError && err.provider === "aws" && /credentials/.test(err.message),
  );
  const env = { AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "secret" };
  assert.equal(createProviders(result.config.providers, env).size, 1);
  const noRegion = parseConfigText(yaml.replace(", region: us-east-1", ""), { source: "<test>", env: {} });
  assert.ok(noRegion.ok);
  assert.throws(
    () => createProviders(noRegion.config.providers, env),
    (err: unknown) => err instanceof ProviderSetupError && /region/.test(err.message),
  );
});

const Greeting = z.object({ greeting: z.string(), count: z.number().int(), tags: z.array(z.string()) });
const GREETING = { greeting: FAKE_BEDROCK_ANSWER, count: 42, tags: [FAKE_BEDROCK_ANSWER] };

Deno.test("bedrock e2e: chat.completions.parse with a zod response_format, whole and streamed", async () => {
  await withGateway(async (client, fake) => {
    const format = zodResponseFormat(Greeting, "greeting");
    const messages = [{ role: "user" as const, content: "Greet me." }];
    const parsed = await client.chat.completions.parse({
      model: "chat-claude",
      messages,
      response_format: format,
    });
    assert.deepEqual(parsed.choices[0].message.parsed, GREETING);
    assert.equal(parsed.choices[0].finish_reason, "stop");
    assert.ok(!parsed.choices[0].message.tool_calls?.length, "the answer is content, not a tool call");
    const sent = fake.requests.at(-1)!.body.toolConfig as {
      tools: { toolSpec: { name: string; inputSchema: { json: unknown } } }[];
      toolChoice: unknown;
    };
    assert.deepEqual(sent.toolChoice, { any: {} });
    assert.equal(sent.tools[0].toolSpec.name, "json_response");
    assert.deepEqual(sent.tools[0].toolSpec.inputSchema.json, format.json_schema.schema);

    const deltas: string[] = [];
    const stream = client.chat.completions.stream({
      model: "chat-claude",
      messages,
      response_format: format,
    });
    stream.on("content.delta", (e) => deltas.push(e.delta));
    const final = await stream.finalChatCompletion();
    assert.deepEqual(final.choices[0].message.parsed, GREETING);
    assert.equal(final.choices[0].finish_reason, "stop");
    assert.ok(deltas.length > 1, "the JSON was forwarded in the pieces ConverseStream sent");

    // json_object: any JSON object; thinking is left off, as Claude refuses it with a forced tool.
    const object = await client.chat.completions.create({
      model: "chat-claude",
      messages: [{ role: "user", content: "Answer in JSON." }],
      response_format: { type: "json_object" },
      reasoning_effort: "low",
    });
    assert.deepEqual(JSON.parse(object.choices[0].message.content!), {});
    assert.equal("additionalModelRequestFields" in fake.requests.at(-1)!.body, false);
  });
});

Deno.test("bedrock e2e: reasoning_effort beside a forced tool or a temperature is refused by name, or dropped and named", async () => {
  await withGateway(async (client, fake) => {
    const messages = [{ role: "user" as const, content: "Weather in Paris?" }];
    const forced = { tools: [WEATHER_TOOL], tool_choice: "required" as const };
    // unsupported_params: error (the default): the gateway's 400 names reasoning_effort; Bedrock is not asked.
    const refused = await client.chat.completions.create({
      model: "chat-claude",
      messages,
      ...forced,
      reasoning_effort: "low",
    }).then(() => undefined, (e: unknown) => e);
    assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
    assert.equal(refused.param, "reasoning_effort");
    assert.equal(fake.requests.length, 0);

    // unsupported_params: drop: the forced tool is called without thinking, and the drop is named.
    const { data, response } = await client.chat.completions.create({
      model: "chat-claude-drop",
      messages,
      ...forced,
      reasoning_effort: "low",
    }).withResponse();
    assert.equal(data.choices[0].finish_reason, "tool_calls");
    assert.equal(response.headers.get("x-gateway-dropped"), "reasoning_effort");
    const sent = fake.requests.at(-1)!.body;
    assert.deepEqual((sent.toolConfig as { toolChoice: unknown }).toolChoice, { any: {} });
    assert.equal("additionalModelRequestFields" in sent, false);

    // A temperature other than 1 is the client's to keep: thinking goes, named.
    const warm = await client.chat.completions.create({
      model: "chat-claude-drop",
      messages,
      temperature: 0.2,
      reasoning_effort: "low",
    }).withResponse();
    assert.equal(warm.data.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    assert.equal(warm.response.headers.get("x-gateway-dropped"), "reasoning_effort");
    assert.deepEqual(fake.requests.at(-1)!.body.inferenceConfig, { temperature: 0.2 });
  });
});

Deno.test("bedrock e2e: an empty tool result and whitespace-only text parts reach Converse without blank text", async () => {
  await withGateway(async (client, fake) => {
    const call = {
      id: FAKE_TOOL_USE_ID,
      type: "function" as const,
      function: { name: "get_weather", arguments: '{"city":"Paris"}' },
    };
    const completion = await client.chat.completions.create({
      model: "chat-claude",
      tools: [WEATHER_TOOL],
      messages: [
        { role: "system", content: " " },
        {
          role: "user",
          content: [{ type: "text", text: "Weather in Paris?" }, { type: "text", text: "\n\n" }],
        },
        { role: "assistant", content: "\n\n", tool_calls: [call] },
        { role: "tool", tool_call_id: FAKE_TOOL_USE_ID, content: "" },
      ],
    });
    assert.equal(completion.choices[0].message.content, FAKE_BEDROCK_ANSWER);
    const sent = fake.requests.at(-1)!.body;
    assert.equal("system" in sent, false);
    assert.deepEqual(sent.messages, [
      { role: "user", content: [{ text: "Weather in Paris?" }] },
      {
        role: "assistant",
        content: [{
          toolUse: { toolUseId: FAKE_TOOL_USE_ID, name: "get_weather", input: { city: "Paris" } },
        }],
      },
      {
        role: "user",
        content: [{
          toolResult: { toolUseId: FAKE_TOOL_USE_ID, content: [{ json: {} }], status: "success" },
        }],
      },
    ]);
  });
});
