/**
 * `POST /v1/responses` end to end with the official `openai` SDK against a gateway on a real socket, through
 * a fake OpenAI-compatible chat upstream (translated) and through `builtin`. Every Response object and stream
 * event the SDK receives is validated against OpenAI's published schemas (`Response`, `ResponseStreamEvent`
 * of `../shared/reference/openai-openapi.yaml`; skipped locally without it, required in CI), and every stream
 * is checked whole (`tests/helpers/responses_conformance.ts`).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { z } from "zod";
import {
  FAKE_ANSWER,
  FAKE_KEY,
  FAKE_REASONING,
  FAKE_REASONING_TOKENS,
  type FakeUpstream,
  startFakeOpenAI,
} from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway, waitForLog } from "../helpers/gateway.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import {
  checkEvents,
  checkResponse,
  outputTextOf,
  parseSse,
  ResponsesWire,
  type WireEvent,
} from "../helpers/responses_conformance.ts";

function configFor(fake: FakeUpstream): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  fake: { type: openai, base_url: "${fake.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-fake: { type: chat, targets: [ { provider: fake, model: gpt-ok } ] }
  chat-tools: { type: chat, targets: [ { provider: fake, model: gpt-tools } ] }
  chat-cut: { type: chat, targets: [ { provider: fake, model: gpt-cut } ] }
  chat-reasoning: { type: chat, targets: [ { provider: fake, model: gpt-reasoning } ] }
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, fake: FakeUpstream, client: OpenAI) => Promise<void>) {
  return withFakeGateway(startFakeOpenAI, configFor, fn);
}

// ---- conformance: the spec's schemas (when at hand) and what a stream must hold together ----

const schemas = await loadOpenApiSchemas();

/** A Response object: valid against the spec's `Response`, and the shapes the gateway promises. */
function assertResponse(response: Record<string, unknown>, alias: string): void {
  checkResponse(schemas, response);
  assert.equal(response.model, alias);
  assert.equal(typeof response.created_at, "number");
  for (const item of response.output as Record<string, unknown>[]) {
    if (item.type === "message") {
      assert.match(String(item.id), /^msg_/);
      for (const part of item.content as Record<string, unknown>[]) {
        if (part.type === "output_text") assert.deepEqual(part.annotations, []);
      }
    } else if (item.type === "function_call") assert.match(String(item.id), /^fc_/);
    else if (item.type === "reasoning") assert.match(String(item.id), /^rs_/);
    else assert.fail(`unexpected output item ${item.type}`);
  }
}

/** The events of a raw stream, each valid against `ResponseStreamEvent`, the stream whole and consistent. */
async function readEvents(response: Response): Promise<WireEvent[]> {
  const events = parseSse(await response.text());
  checkEvents(schemas, events);
  return events;
}

/** A client whose every `/responses` answer is recorded and checked at the end of the test. */
function wireClient(gw: TestGateway): { client: OpenAI; wire: ResponsesWire } {
  const wire = new ResponsesWire(schemas);
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
  return { client, wire };
}

async function rawResponses(gw: TestGateway, body: unknown): Promise<Response> {
  return await fetch(`${gw.baseURL}/responses`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
}

const WEATHER_TOOL = {
  type: "function" as const,
  name: "get_weather",
  description: "Weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
  strict: true,
};

Deno.test("responses: create with a string and with items, via fake upstream and builtin", async () => {
  await withGateway(async (gw, fake) => {
    const { client, wire } = wireClient(gw);
    const { data, response } = await client.responses
      .create({ model: "chat-fake", input: "Hi", instructions: "Be brief.", temperature: 0.3 })
      .withResponse();
    assertResponse(data as unknown as Record<string, unknown>, "chat-fake");
    assert.equal(data.status, "completed");
    assert.equal(data.output_text, FAKE_ANSWER);
    assert.equal(data.instructions, "Be brief.");
    assert.equal(data.temperature, 0.3);
    assert.equal(data.usage?.total_tokens, 18);
    assert.equal(data.usage?.input_tokens_details.cached_tokens, 0);
    assert.equal(data.usage?.output_tokens_details.reasoning_tokens, 0);
    assert.equal(response.headers.get("x-gateway-provider"), "fake");
    const sent = fake.requests.at(-1)!.body;
    assert.equal(sent.model, "gpt-ok");
    assert.deepEqual(sent.messages, [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
    ]);
    assert.equal(sent.temperature, 0.3);

    const items = await client.responses.create({
      model: "chat-echo",
      input: [
        { role: "developer", content: "Echo me." },
        { role: "user", content: [{ type: "input_text", text: "first" }] },
        { role: "assistant", content: "ok" },
        { type: "message", role: "user", content: [{ type: "input_text", text: "the last words" }] },
      ],
      max_output_tokens: 64,
    });
    assertResponse(items as unknown as Record<string, unknown>, "chat-echo");
    assert.equal(items.output_text, "the last words");
    assert.equal(items.max_output_tokens, 64);
    assert.ok((items.usage?.output_tokens ?? 0) > 0);

    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "chat-echo");
    assert.equal(line.endpoint, "responses");
    assert.equal(line.status, 200);

    // A stored response read back is the same Response object.
    const got = await client.responses.retrieve(items.id);
    assertResponse(got as unknown as Record<string, unknown>, "chat-echo");
    assert.deepEqual(got.output, items.output);
    assert.deepEqual(await wire.check(), { responses: 3, streams: 0 });
  });
});

Deno.test("responses: a function-tool round trip (function_call → function_call_output → answer)", async () => {
  await withGateway(async (gw, fake) => {
    const { client, wire } = wireClient(gw);
    const first = await client.responses.create({
      model: "chat-tools",
      input: "Weather in Paris?",
      tools: [WEATHER_TOOL],
      tool_choice: "auto",
    });
    assertResponse(first as unknown as Record<string, unknown>, "chat-tools");
    const call = first.output.find((i) => i.type === "function_call");
    assert.ok(call && call.type === "function_call");
    assert.equal(call.name, "get_weather");
    assert.deepEqual(JSON.parse(call.arguments), { city: "Paris" });
    assert.deepEqual(fake.requests.at(-1)!.body.tools, [{
      type: "function",
      function: {
        name: "get_weather",
        description: "Weather for a city",
        parameters: WEATHER_TOOL.parameters,
        strict: true,
      },
    }]);
    // The tools the client gave are echoed in the Responses form.
    assert.equal(first.tools[0].type, "function");

    // A tool without `strict` goes upstream without it (the chat form's default, non-strict), and the echo
    // says so rather than claiming OpenAI's strict-when-compatible default.
    // (The TS SDK's types always ask for `strict`; other clients, and raw JSON, leave it out.)
    const { strict: _, ...loose } = WEATHER_TOOL;
    const second = await client.responses.create({
      model: "chat-tools",
      input: "Weather?",
      tools: [loose as typeof WEATHER_TOOL],
    });
    assert.equal("strict" in (fake.requests.at(-1)!.body.tools as { function: object }[])[0].function, false);
    assert.deepEqual(second.tools, [{ ...loose, strict: false }]);

    const final = await client.responses.create({
      model: "chat-fake",
      input: [
        { role: "user", content: "Weather in Paris?" },
        call,
        { type: "function_call_output", call_id: call.call_id, output: '{"temp_c":21}' },
      ],
      tools: [WEATHER_TOOL],
    });
    assert.equal(final.output_text, FAKE_ANSWER);
    const messages = fake.requests.at(-1)!.body.messages as Record<string, unknown>[];
    assert.deepEqual(messages, [
      { role: "user", content: "Weather in Paris?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: call.call_id,
          type: "function",
          function: { name: "get_weather", arguments: call.arguments },
        }],
      },
      { role: "tool", tool_call_id: call.call_id, content: '{"temp_c":21}' },
    ]);
    assert.deepEqual(await wire.check(), { responses: 3, streams: 0 });
  });
});

Deno.test("responses: text.format json_schema, and responses.parse with a zod schema", async () => {
  await withGateway(async (gw, fake) => {
    const { client, wire } = wireClient(gw);
    const Answer = z.object({ greeting: z.string() });
    // The fake answers with plain text, so the SDK's parse fails on it: check the request instead, then parse
    // builtin's echo of a JSON document.
    await client.responses.create({
      model: "chat-fake",
      input: "Hi",
      text: { format: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true } },
    });
    assert.deepEqual(fake.requests.at(-1)!.body.response_format, {
      type: "json_schema",
      json_schema: { name: "answer", schema: { type: "object" }, strict: true },
    });
    const parsed = await client.responses.parse({
      model: "chat-echo",
      input: JSON.stringify({ greeting: "hello" }),
      text: { format: zodTextFormat(Answer, "answer") },
    });
    assert.deepEqual(parsed.output_parsed, { greeting: "hello" });
    assert.equal(parsed.text?.format?.type, "json_schema");
    assert.deepEqual(await wire.check(), { responses: 2, streams: 0 });
  });
});

Deno.test("responses: the stream() helper to finalResponse(), and the raw events in order", async () => {
  await withGateway(async (gw) => {
    const { client, wire } = wireClient(gw);
    const deltas: string[] = [];
    const runner = client.responses.stream({ model: "chat-fake", input: "Hi" });
    runner.on("response.output_text.delta", (e) => deltas.push(e.delta));
    const final = await runner.finalResponse();
    assertResponse(final as unknown as Record<string, unknown>, "chat-fake");
    assert.equal(final.status, "completed");
    assert.equal(final.output_text, FAKE_ANSWER);
    assert.ok(deltas.length > 1, "the answer arrives in several deltas");
    assert.equal(deltas.join(""), FAKE_ANSWER);
    assert.deepEqual(await wire.check(), { responses: 0, streams: 1 });

    const raw = await rawResponses(gw, { model: "chat-fake", input: "Hi", stream: true });
    assert.equal(raw.status, 200);
    assert.match(raw.headers.get("content-type") ?? "", /^text\/event-stream/);
    const events = await readEvents(raw);
    const types = events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 4), [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
    ]);
    assert.deepEqual(types.slice(-4), [
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const text = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
    assert.equal(text, FAKE_ANSWER);
    const done = events.at(-1)!.response as Record<string, unknown>;
    assertResponse(done, "chat-fake");
    assert.ok((done.usage as { total_tokens: number }).total_tokens > 0);
    for (const e of events.slice(0, 2)) assertResponse(e.response as Record<string, unknown>, "chat-fake");
    assert.equal(outputTextOf(done), FAKE_ANSWER);

    const line = await waitForLog(
      gw,
      (l) => l.msg === "request" && l.endpoint === "responses" && l.stream === true,
    );
    assert.ok(Number(line.prompt_tokens) > 0 && Number(line.completion_tokens) > 0);
  });
});

Deno.test("responses: a streamed function call gives its argument events and the item", async () => {
  await withGateway(async (gw) => {
    const raw = await rawResponses(gw, {
      model: "chat-tools",
      input: "Weather in Paris?",
      tools: [WEATHER_TOOL],
      stream: true,
    });
    const events = await readEvents(raw);
    const types = events.map((e) => e.type);
    assert.ok(types.includes("response.function_call_arguments.delta"));
    const argsDone = events.find((e) => e.type === "response.function_call_arguments.done")!;
    assert.deepEqual(JSON.parse(String(argsDone.arguments)), { city: "Paris" });
    const args = events.filter((e) => e.type === "response.function_call_arguments.delta").map((e) =>
      e.delta
    );
    assert.equal(args.join(""), argsDone.arguments);
    const done = events.at(-1)!;
    assert.equal(done.type, "response.completed");
    const output = (done.response as { output: Record<string, unknown>[] }).output;
    assert.equal(output.at(-1)!.type, "function_call");
    assert.equal(output.at(-1)!.name, "get_weather");
  });
});

Deno.test("responses: upstream reasoning (reasoning_content) is a reasoning item and summary events", async () => {
  await withGateway(async (gw) => {
    const { client, wire } = wireClient(gw);
    const whole = await client.responses.create({ model: "chat-reasoning", input: "Hi" });
    assertResponse(whole as unknown as Record<string, unknown>, "chat-reasoning");
    assert.deepEqual(whole.output.map((i) => i.type), ["reasoning", "message"]);
    const reasoning = whole.output[0];
    assert.ok(reasoning.type === "reasoning");
    assert.deepEqual(reasoning.summary, [{ type: "summary_text", text: FAKE_REASONING }]);
    assert.equal(whole.output_text, FAKE_ANSWER, "the reasoning stays out of the answer");
    assert.equal(whole.usage?.output_tokens_details.reasoning_tokens, FAKE_REASONING_TOKENS);

    const deltas: string[] = [];
    const runner = client.responses.stream({ model: "chat-reasoning", input: "Hi" });
    runner.on("response.reasoning_summary_text.delta", (e) => deltas.push(e.delta));
    const streamed = await runner.finalResponse();
    assert.ok(deltas.length > 1, "the reasoning arrives in several deltas");
    assert.equal(deltas.join(""), FAKE_REASONING);
    assert.deepEqual(streamed.output.map((i) => i.type), ["reasoning", "message"]);
    assert.deepEqual(streamed.output[0].type === "reasoning" && streamed.output[0].summary, [
      { type: "summary_text", text: FAKE_REASONING },
    ]);
    assert.equal(streamed.output_text, FAKE_ANSWER);
    assert.equal(streamed.usage?.output_tokens_details.reasoning_tokens, FAKE_REASONING_TOKENS);
    assert.deepEqual(await wire.check(), { responses: 1, streams: 1 });

    const events = await readEvents(
      await rawResponses(gw, { model: "chat-reasoning", input: "Hi", stream: true }),
    );
    const types = events.map((e) => e.type);
    const first = types.indexOf("response.reasoning_summary_text.delta");
    assert.deepEqual(types.slice(2, first + 1), [
      "response.output_item.added",
      "response.reasoning_summary_part.added",
      "response.reasoning_summary_text.delta",
    ]);
    const doneAt = types.indexOf("response.reasoning_summary_text.done");
    assert.deepEqual(types.slice(doneAt, doneAt + 5), [
      "response.reasoning_summary_text.done",
      "response.reasoning_summary_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
    ]);
  });
});

Deno.test("responses: an upstream cut mid-stream ends with error + response.failed, and the SDK raises", async () => {
  await withGateway(async (gw) => {
    const { client, wire } = wireClient(gw);
    const raw = await rawResponses(gw, { model: "chat-cut", input: "Hi", stream: true });
    const events = await readEvents(raw);
    assert.deepEqual(events.slice(-2).map((e) => e.type), ["error", "response.failed"]);
    assert.ok(!events.some((e) => e.type === "response.completed"));
    const failed = events.at(-1)!.response as Record<string, unknown>;
    assert.equal(failed.status, "failed");
    assert.equal((failed.error as { code: string }).code, "server_error");

    await assert.rejects(async () => {
      const stream = await client.responses.create({ model: "chat-cut", input: "Hi", stream: true });
      for await (const _ of stream) { /* read to the end */ }
    }, OpenAI.APIError);
    await assert.rejects(client.responses.stream({ model: "chat-cut", input: "Hi" }).finalResponse());
    assert.deepEqual(await wire.check(), { responses: 0, streams: 2 });
  });
});

Deno.test("responses: refusals name their param; a bad previous_response_id and background", async () => {
  await withGateway(async (gw, fake, _client) => {
    const before = fake.requests.length;
    const cases: [unknown, string | null, string][] = [
      [
        { model: "chat-fake", input: [{ type: "web_search_call", id: "ws_1", status: "completed" }] },
        "input[0].type",
        "web_search_call",
      ],
      [
        { model: "chat-fake", input: "Hi", previous_response_id: 1 },
        "previous_response_id",
        "previous_response_id",
      ],
      [{ model: "chat-fake", input: "Hi", background: true }, "background", "Background"],
      [{ model: "chat-fake", input: "Hi", store: "yes" }, "store", "Invalid type"],
      [{ model: "chat-fake" }, "input", "Missing"],
      [{ model: "chat-fake", input: [{ role: "robot", content: "x" }] }, "input[0].role", "robot"],
    ];
    for (const [body, param, message] of cases) {
      const res = await rawResponses(gw, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      const { error } = await res.json();
      assert.equal(error.type, "invalid_request_error");
      assert.equal(error.param, param);
      assert.ok(String(error.message).includes(message), error.message);
    }
    assert.equal(fake.requests.length, before, "nothing refused reaches the upstream");
  });
});
