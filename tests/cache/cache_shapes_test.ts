/**
 * The response cache across client APIs and shapes (issue 24, acceptance 1), with the vendors' own SDKs over
 * real sockets, on an alias served by an OpenAI-compatible upstream (Responses and Messages translated):
 *
 * - each client API, JSON and streamed: a miss, then a hit for the same request, the upstream called once;
 * - one entry across shapes: filled by a streamed chat request, hit by a non-streamed Responses request and by
 *   a streamed Messages request, each in its own wire format with fresh ids;
 * - every replayed stream checked: chat chunks against OpenAI's schema ending in `[DONE]`, Responses events
 *   against the schema and event order, Messages events in Anthropic's order (the SDK's own stream reader).
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { checkEvents, parseSse } from "../helpers/responses_conformance.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type CacheUpstream, startCacheUpstream } from "./cache_upstream.ts";

const schemas = await loadOpenApiSchemas();

async function withCache(fn: (gw: TestGateway, up: CacheUpstream) => Promise<void>): Promise<void> {
  const up = startCacheUpstream();
  const gw = await startGateway(`
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-cache-upstream-key-0001 }
models:
  cached: { type: chat, targets: [{ provider: up, model: echo }], cache: { ttl: 10m } }
  chat-plain: { type: chat, targets: [{ provider: up, model: echo }] }
${TEST_TOKENS_YAML}`);
  try {
    await fn(gw, up);
  } finally {
    await gw.stop();
    await up.stop();
  }
}

const openai = (gw: TestGateway) => new OpenAI({ baseURL: gw.baseURL, apiKey: TEST_TOKEN, maxRetries: 0 });
const anthropic = (gw: TestGateway) => new Anthropic({ baseURL: gw.url, apiKey: TEST_TOKEN, maxRetries: 0 });

/** A raw streamed chat request: its headers and its SSE `data:` payloads, each chunk checked by the schema. */
async function rawChatStream(gw: TestGateway, body: Record<string, unknown>) {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const data = text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6));
  assert.equal(data.at(-1), "[DONE]", "a stream ends with [DONE]");
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  for (const chunk of chunks) schemas?.assert("CreateChatCompletionStreamResponse", chunk, "chunk");
  const content = chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("");
  return { headers: res.headers, chunks, content };
}

Deno.test("cache: chat completions, JSON then streamed, miss then hit; the upstream is called once per entry", async () => {
  await withCache(async (gw, up) => {
    const client = openai(gw);
    const ask = { model: "cached", messages: [{ role: "user" as const, content: "Name a colour." }] };
    const first = await client.chat.completions.create(ask).withResponse();
    assert.equal(first.response.headers.get("x-cache"), "MISS");
    const second = await client.chat.completions.create(ask).withResponse();
    assert.equal(second.response.headers.get("x-cache"), "HIT");
    assert.ok(Number(second.response.headers.get("age")) >= 0);
    assert.equal(up.calls.length, 1, "the hit never reached the upstream");
    assert.equal(second.data.choices[0].message.content, "answer 1: Name a colour.");
    assert.notEqual(second.data.id, first.data.id, "a hit has a fresh id");
    assert.match(second.data.id, /^chatcmpl-/);
    assert.equal(second.data.model, "cached");
    assert.deepEqual(second.data.usage, first.data.usage);

    // The same request streamed: the entry a JSON answer filled, replayed as several chunks.
    const streamed = await rawChatStream(gw, ask);
    assert.equal(streamed.headers.get("x-cache"), "HIT");
    assert.equal(streamed.content, "answer 1: Name a colour.");
    assert.ok(streamed.chunks.length >= 4, `several chunks, not one blob: ${streamed.chunks.length}`);
    assert.equal(streamed.chunks[0].choices[0].delta.role, "assistant");
    assert.equal(streamed.chunks.at(-1).choices[0].finish_reason, "stop");
    assert.equal(up.calls.length, 1);

    // An alias without cache: sends no x-cache and always goes upstream.
    const plain = await client.chat.completions.create({ ...ask, model: "chat-plain" }).withResponse();
    assert.equal(plain.response.headers.get("x-cache"), null);
    assert.equal(up.calls.length, 2);
  });
});

Deno.test("cache: filled by a streamed chat request, hit by non-streamed Responses and streamed Messages", async () => {
  await withCache(async (gw, up) => {
    const question = "What is the capital of France?";
    const filled = await rawChatStream(gw, {
      model: "cached",
      max_tokens: 256,
      messages: [{ role: "user", content: question }],
    });
    assert.equal(filled.headers.get("x-cache"), "MISS");
    assert.equal(filled.content, `answer 1: ${question}`);
    assert.equal(up.calls.length, 1);

    // Responses, not streamed: the same chat form (input text, max_output_tokens) is the same entry.
    const responses = await openai(gw).responses.create({
      model: "cached",
      input: question,
      max_output_tokens: 256,
    }).withResponse();
    assert.equal(responses.response.headers.get("x-cache"), "HIT");
    assert.equal(responses.data.output_text, `answer 1: ${question}`);
    assert.match(responses.data.id, /^resp_/);
    assert.equal(responses.data.status, "completed");
    schemas?.assert("Response", responses.data, "Response");
    assert.equal(up.calls.length, 1);

    // Messages, streamed, through the SDK's stream reader (it raises on events out of Anthropic's order).
    const stream = anthropic(gw).messages.stream({
      model: "cached",
      max_tokens: 256,
      messages: [{ role: "user", content: question }],
    });
    const types: string[] = [];
    stream.on("streamEvent", (event) => types.push(event.type));
    const message = await stream.finalMessage();
    assert.equal(message.content[0].type === "text" && message.content[0].text, `answer 1: ${question}`);
    assert.match(message.id, /^msg_/);
    assert.equal(message.stop_reason, "end_turn");
    assert.equal(types[0], "message_start");
    assert.deepEqual(types.slice(-2), ["message_delta", "message_stop"]);
    assert.ok(
      types.filter((t) => t === "content_block_delta").length >= 2,
      "the text comes in several deltas",
    );
    assert.equal(up.calls.length, 1, "three client APIs, one upstream call");
  });
});

Deno.test("cache: Responses streamed and Messages JSON each miss then hit; replayed events pass the schema", async () => {
  await withCache(async (gw, up) => {
    const post = (body: Record<string, unknown>) =>
      fetch(`${gw.baseURL}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const ask = { model: "cached", input: "Say hello.", stream: true };
    const ids: string[] = [];
    for (const expected of ["MISS", "HIT"]) {
      const res = await post(ask);
      assert.equal(res.headers.get("x-cache"), expected);
      const events = parseSse(await res.text());
      const final = checkEvents(schemas, events);
      assert.equal(final.status, "completed");
      ids.push(String(final.id));
      const text = events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
      assert.equal(text, "answer 1: Say hello.");
    }
    assert.notEqual(ids[0], ids[1], "each answer has its own response id");
    assert.equal(up.calls.length, 1);

    const client = anthropic(gw);
    const messages = [{ role: "user" as const, content: "Say goodbye." }];
    const miss = await client.messages.create({ model: "cached", max_tokens: 64, messages }).withResponse();
    const hit = await client.messages.create({ model: "cached", max_tokens: 64, messages }).withResponse();
    assert.equal(miss.response.headers.get("x-cache"), "MISS");
    assert.equal(hit.response.headers.get("x-cache"), "HIT");
    assert.deepEqual(hit.data.content, miss.data.content);
    assert.notEqual(hit.data.id, miss.data.id);
    assert.equal(up.calls.length, 2);
  });
});
