/**
 * `POST /v1/responses` through the fake Anthropic, Gemini and Bedrock upstreams with the official `openai`
 * SDK: the Responses client cannot tell which vendor answered — a whole Response, the stream helper's final
 * Response, a function call (whole and streamed) and its round trip, and a length stop as
 * `status: "incomplete"` with `incomplete_details.reason: "max_output_tokens"`. Every Response object and
 * stream the SDK receives is validated against OpenAI's published schemas and checked whole
 * (`tests/helpers/responses_conformance.ts`).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import type { Response as OpenAIResponse } from "openai/resources/responses/responses";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  FAKE_CLAUDE_THINKING,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_BEDROCK_REASONING,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { FAKE_KEY, FAKE_REFUSAL, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  FAKE_GEMINI_KEY,
  FAKE_GEMINI_THOUGHT,
  type FakeGemini,
  GEMINI_ANSWER,
  startFakeGemini,
} from "../helpers/fake_gemini.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { ResponsesWire } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

/** A client whose every `/responses` answer is recorded, then checked by `wire.check()`. */
function wireClient(gw: TestGateway): { client: OpenAI; wire: ResponsesWire } {
  const wire = new ResponsesWire(schemas);
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
  return { client, wire };
}

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" }, location: { type: "string" }, unit: { type: "string" } },
    additionalProperties: false,
  },
  strict: false,
};

/** One vendor: how to start its fake and configure the gateway, and what its fake answers. */
interface Vendor<F> {
  name: string;
  start: () => F;
  config: (fake: F) => string;
  env?: Record<string, string>;
  answer: string;
  /** The reasoning the fake gives first when asked to think (`reasoning.effort`). */
  reasoning: string;
  /** The tool call's arguments the fake gives. */
  args: Record<string, unknown>;
  /** How many upstream requests the fake has seen. */
  seen: (fake: F) => number;
  /** The body of the last upstream request. */
  last: (fake: F) => Record<string, unknown>;
}

const anthropic: Vendor<FakeAnthropic> = {
  name: "anthropic",
  start: startFakeAnthropic,
  config: (fake) => `
providers:
  up: { type: anthropic, base_url: "${fake.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}", default_max_tokens: 1000 }
models:
  chat-ok: { type: chat, targets: [ { provider: up, model: claude-ok } ] }
  chat-tools: { type: chat, targets: [ { provider: up, model: claude-tools } ] }
  chat-length: { type: chat, targets: [ { provider: up, model: claude-length } ] }
${TEST_TOKENS_YAML}`,
  answer: FAKE_CLAUDE_ANSWER,
  reasoning: FAKE_CLAUDE_THINKING,
  args: { location: "San Francisco, CA", unit: "fahrenheit" },
  seen: (fake) => fake.requests.length,
  last: (fake) => fake.requests.at(-1)!.body,
};

const gemini: Vendor<FakeGemini> = {
  name: "gemini",
  start: startFakeGemini,
  config: (fake) => `
providers:
  up: { type: gemini, base_url: "${fake.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-ok: { type: chat, targets: [ { provider: up, model: gem-ok } ] }
  chat-tools: { type: chat, targets: [ { provider: up, model: gem-tools } ] }
${TEST_TOKENS_YAML}`,
  answer: GEMINI_ANSWER,
  reasoning: FAKE_GEMINI_THOUGHT,
  args: { city: "Paris" },
  seen: (fake) => fake.requests.length,
  last: (fake) => fake.requests.at(-1)!.body,
};

const bedrock: Vendor<FakeBedrock> = {
  name: "bedrock",
  start: startFakeBedrock,
  config: (fake) => `
providers:
  up:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${fake.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-ok: { type: chat, targets: [ { provider: up, model: "anthropic.claude-3-5-sonnet-20240620-v1:0" } ] }
  chat-tools: { type: chat, targets: [ { provider: up, model: "us.tools-model-v1:0" } ] }
${TEST_TOKENS_YAML}`,
  answer: FAKE_BEDROCK_ANSWER,
  reasoning: FAKE_BEDROCK_REASONING,
  args: { city: "Paris" },
  seen: (fake) => fake.requests.length,
  last: (fake) => fake.requests.at(-1)!.body,
};

/** The Response shapes every vendor must give. */
function assertResponse(response: OpenAIResponse, alias: string): void {
  assert.match(response.id, /^resp_[0-9a-f]{48}$/);
  assert.equal(response.object, "response");
  assert.equal(response.model, alias);
  assert.ok(response.usage && response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
  assert.equal(response.usage.total_tokens, response.usage.input_tokens + response.usage.output_tokens);
  for (const item of response.output) {
    if (item.type === "message") {
      assert.match(item.id, /^msg_/);
      for (const part of item.content) {
        if (part.type === "output_text") assert.deepEqual(part.annotations, []);
      }
    } else if (item.type === "function_call") assert.match(item.id!, /^fc_/);
    else if (item.type === "reasoning") assert.match(item.id, /^rs_/);
    else assert.fail(`unexpected output item ${item.type}`);
  }
}

function vendorTests<F extends { stop(): Promise<void> }>(vendor: Vendor<F>): void {
  const withGateway = (fn: (gw: TestGateway, fake: F, client: OpenAI) => Promise<void>) =>
    withFakeGateway(
      vendor.start,
      (fake) => `server: { host: 127.0.0.1, port: 0 }\n${vendor.config(fake)}`,
      fn,
      {
        ...vendor.env,
      },
    );

  Deno.test(`responses via ${vendor.name}: a whole Response and the stream helper's final Response`, async () => {
    await withGateway(async (gw, fake) => {
      const { client, wire } = wireClient(gw);
      const whole = await client.responses.create({
        model: "chat-ok",
        input: "Hi",
        instructions: "Be brief.",
      });
      assertResponse(whole, "chat-ok");
      assert.equal(whole.status, "completed");
      assert.equal(whole.incomplete_details, null);
      assert.equal(whole.output_text, vendor.answer);
      assert.equal(whole.instructions, "Be brief.");

      const deltas: string[] = [];
      const runner = client.responses.stream({
        model: "chat-ok",
        input: [{ role: "user", content: [{ type: "input_text", text: "Hi" }] }],
      });
      runner.on("response.output_text.delta", (e) => deltas.push(e.delta));
      const streamed = await runner.finalResponse();
      assertResponse(streamed, "chat-ok");
      assert.equal(streamed.status, "completed");
      assert.equal(streamed.output_text, vendor.answer);
      assert.equal(deltas.join(""), vendor.answer);
      assert.ok(deltas.length > 1, "the answer arrives in several deltas");
      assert.equal(vendor.seen(fake), 2);

      const got = await client.responses.retrieve(whole.id);
      assert.deepEqual(got.output, whole.output);
      assert.deepEqual(await wire.check(), { responses: 2, streams: 1 });
    });
  });

  Deno.test(`responses via ${vendor.name}: its reasoning is a reasoning item before the answer, whole and streamed`, async () => {
    await withGateway(async (gw) => {
      const { client, wire } = wireClient(gw);
      const summaryOf = (response: OpenAIResponse) =>
        response.output.flatMap((i) => i.type === "reasoning" ? i.summary.map((s) => s.text) : []).join("");
      const whole = await client.responses.create({
        model: "chat-ok",
        input: "Hi",
        reasoning: { effort: "low" },
      });
      assertResponse(whole, "chat-ok");
      assert.equal(whole.output[0].type, "reasoning");
      assert.equal(whole.output.at(-1)!.type, "message");
      assert.equal(summaryOf(whole), vendor.reasoning);
      assert.equal(whole.output_text, vendor.answer, "the reasoning stays out of the answer");

      const deltas: string[] = [];
      const runner = client.responses.stream({ model: "chat-ok", input: "Hi", reasoning: { effort: "low" } });
      runner.on("response.reasoning_summary_text.delta", (e) => deltas.push(e.delta));
      const streamed = await runner.finalResponse();
      assert.equal(deltas.join(""), vendor.reasoning);
      assert.equal(summaryOf(streamed), vendor.reasoning);
      assert.equal(streamed.output_text, vendor.answer);
      assert.deepEqual(await wire.check(), { responses: 1, streams: 1 });
    });
  });

  Deno.test(`responses via ${vendor.name}: a function call, whole and streamed, and its round trip`, async () => {
    await withGateway(async (gw, fake) => {
      const { client, wire } = wireClient(gw);
      const first = await client.responses.create({
        model: "chat-tools",
        input: "Weather in Paris?",
        tools: [WEATHER_TOOL],
      });
      assertResponse(first, "chat-tools");
      assert.equal(first.status, "completed");
      const call = first.output.find((i) => i.type === "function_call");
      assert.ok(call && call.type === "function_call");
      assert.equal(call.name, "get_weather");
      assert.ok(call.call_id.length > 0);
      assert.deepEqual(JSON.parse(call.arguments), vendor.args);

      const argDeltas: string[] = [];
      const runner = client.responses.stream({
        model: "chat-tools",
        input: "Weather in Paris?",
        tools: [WEATHER_TOOL],
      });
      runner.on("response.function_call_arguments.delta", (e) => argDeltas.push(e.delta));
      const streamed = await runner.finalResponse();
      assertResponse(streamed, "chat-tools");
      const streamedCall = streamed.output.find((i) => i.type === "function_call");
      assert.ok(streamedCall && streamedCall.type === "function_call");
      assert.equal(streamedCall.name, "get_weather");
      assert.deepEqual(JSON.parse(streamedCall.arguments), vendor.args);
      assert.equal(argDeltas.join(""), streamedCall.arguments);
      // A streamed call leaves the message (if any) before it, like the whole answer.
      assert.deepEqual(streamed.output.map((i) => i.type), first.output.map((i) => i.type));

      const final = await client.responses.create({
        model: "chat-tools",
        input: [
          { role: "user", content: "Weather in Paris?" },
          call,
          { type: "function_call_output", call_id: call.call_id, output: '{"temp_c":21}' },
        ],
        tools: [WEATHER_TOOL],
      });
      assertResponse(final, "chat-tools");
      assert.equal(final.status, "completed");
      // The call and its output reached the vendor in its own form.
      const sent = JSON.stringify(vendor.last(fake));
      assert.ok(sent.includes("get_weather") && sent.includes("temp_c"), sent);
      assert.deepEqual(await wire.check(), { responses: 2, streams: 1 });
    });
  });
}

vendorTests(anthropic);
vendorTests(gemini);
vendorTests(bedrock);

Deno.test("responses via anthropic: a max_tokens stop is incomplete with reason max_output_tokens, whole and streamed", async () => {
  await withFakeGateway(startFakeAnthropic, anthropic.config, async (gw, fake) => {
    const { client, wire } = wireClient(gw);
    const whole = await client.responses.create({ model: "chat-length", input: "Hi", max_output_tokens: 16 });
    assert.equal(
      fake.requests.at(-1)!.body.max_tokens,
      16,
      "max_output_tokens reaches Anthropic as max_tokens",
    );
    assertResponse(whole, "chat-length");
    assert.equal(whole.status, "incomplete");
    assert.deepEqual(whole.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(whole.max_output_tokens, 16);
    assert.equal(whole.output_text, FAKE_CLAUDE_ANSWER);

    const events: string[] = [];
    const stream = await client.responses.create({
      model: "chat-length",
      input: "Hi",
      max_output_tokens: 16,
      stream: true,
    });
    let last: OpenAIResponse | undefined;
    for await (const event of stream) {
      events.push(event.type);
      if (event.type === "response.incomplete") last = event.response;
    }
    assert.equal(events.at(-1), "response.incomplete");
    assert.ok(!events.includes("response.completed"));
    assert.ok(last);
    assert.equal(last.status, "incomplete");
    assert.deepEqual(last.incomplete_details, { reason: "max_output_tokens" });
    const message = last.output.find((i) => i.type === "message");
    assert.ok(message && message.type === "message");
    assert.equal(message.status, "incomplete");
    assert.equal(
      message.content.map((p) => p.type === "output_text" ? p.text : "").join(""),
      FAKE_CLAUDE_ANSWER,
    );
    assert.deepEqual(await wire.check(), { responses: 1, streams: 1 });
  });
});

Deno.test("responses via an OpenAI-compatible upstream: a refusal is a refusal part, whole and streamed", async () => {
  const config = (fake: { baseURL: string }) => `
providers:
  up: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-refuse: { type: chat, targets: [ { provider: up, model: gpt-refuse } ] }
${TEST_TOKENS_YAML}`;
  await withFakeGateway(startFakeOpenAI, config, async (gw) => {
    const { client, wire } = wireClient(gw);
    const refusalOf = (response: OpenAIResponse) =>
      response.output.flatMap((i) => i.type === "message" ? i.content : [])
        .map((p) => p.type === "refusal" ? p.refusal : `<${p.type}>`).join("");
    const whole = await client.responses.create({ model: "chat-refuse", input: "Hi" });
    assert.equal(whole.status, "completed");
    assert.equal(refusalOf(whole), FAKE_REFUSAL);

    const deltas: string[] = [];
    const runner = client.responses.stream({ model: "chat-refuse", input: "Hi" });
    runner.on("response.refusal.delta", (e) => deltas.push(e.delta));
    let done = "";
    runner.on("response.refusal.done", (e) => done = e.refusal);
    const streamed = await runner.finalResponse();
    assert.equal(streamed.status, "completed");
    assert.equal(refusalOf(streamed), FAKE_REFUSAL, "the streamed Response holds the refusal too");
    assert.equal(deltas.join(""), FAKE_REFUSAL);
    assert.equal(done, FAKE_REFUSAL);
    assert.deepEqual(await wire.check(), { responses: 1, streams: 1 });
  });
});
