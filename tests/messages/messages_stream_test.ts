/**
 * `/v1/messages` stream transcripts, as an Anthropic client reads them:
 *
 * - every provider's finish reasons map to the right `stop_reason` on the translated path, whole and streamed
 *   (OpenAI-compatible `stop` / `length` / `tool_calls` / `content_filter`, Gemini `STOP` / `MAX_TOKENS` /
 *   `SAFETY` / a function call, Bedrock Converse `end_turn` / `tool_use`), the streamed `message_start`
 *   carrying the input tokens and its text deltas concatenating to the same message `create` gives;
 * - a stream cut mid-way, through each translated vendor and natively, ends with `event: error` (never
 *   `message_delta` or `message_stop`) and the official SDK raises;
 * - the upstream's bytes split at every offset give the client the same bytes: Gemini's and an
 *   OpenAI-compatible stream through their provider stages and the chat → Anthropic translation, and
 *   Anthropic's own stream through the native stage.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { messagesStreamBody } from "../../lib/api/messages/stream.ts";
import { nativeMessagesStreamBody } from "../../lib/api/messages/native_stream.ts";
import type { MessageFrame } from "../../lib/api/messages/response.ts";
import type { ChatCompletionChunk, JsonObject } from "../../lib/openai/types.ts";
import { anthropicEventTransformer } from "../../lib/providers/anthropic/native.ts";
import { geminiChunkTransformer } from "../../lib/providers/gemini/stream.ts";
import { openAIChunkTransformer } from "../../lib/providers/openai/stream.ts";
import { sseParseTransformer } from "../../lib/sse/parse.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_AWS, FAKE_REGION, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { runStages } from "../helpers/run_stages.ts";
import { startFakes } from "../helpers/fakes.ts";
import { anthropicClient, withTestGateway } from "../helpers/with_gateway.ts";

type Json = Record<string, unknown>;

function withGateway(fn: (gw: TestGateway, client: Anthropic) => Promise<void>): Promise<void> {
  return withTestGateway(() => {
    const fakes = startFakes({
      openai: startFakeOpenAI,
      gemini: startFakeGemini,
      bedrock: startFakeBedrock,
      anthropic: startFakeAnthropic,
    });
    const { openai, gemini, bedrock, anthropic } = fakes;
    return {
      fakes,
      config: `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  oa: { type: openai, base_url: "${openai.baseURL}", api_key: "${FAKE_KEY}" }
  gm: { type: gemini, base_url: "${gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  claude: { type: anthropic, base_url: "${anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  br:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  oa-ok: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  oa-length: { type: chat, targets: [ { provider: oa, model: gpt-length } ] }
  oa-filter: { type: chat, targets: [ { provider: oa, model: gpt-filter } ] }
  oa-tools: { type: chat, targets: [ { provider: oa, model: gpt-tools } ] }
  oa-cut: { type: chat, targets: [ { provider: oa, model: gpt-cut } ] }
  gm-ok: { type: chat, targets: [ { provider: gm, model: gem-ok } ] }
  gm-length: { type: chat, targets: [ { provider: gm, model: gem-length } ] }
  gm-safety: { type: chat, targets: [ { provider: gm, model: gem-safety } ] }
  gm-tools: { type: chat, targets: [ { provider: gm, model: gem-tools } ] }
  gm-cut: { type: chat, targets: [ { provider: gm, model: gem-midstream-error } ] }
  br-ok: { type: chat, targets: [ { provider: br, model: "us.plain-model-v1:0" } ] }
  br-tools: { type: chat, targets: [ { provider: br, model: "us.tools-model-v1:0" } ] }
  br-cut: { type: chat, targets: [ { provider: br, model: "us.midstream-model-v1:0" } ] }
  claude-cut: { type: chat, targets: [ { provider: claude, model: claude-midstream-error } ] }
${TEST_TOKENS_YAML}`,
    };
  }, (gw) => fn(gw, anthropicClient(gw)));
}

/** The frames of an Anthropic event stream, each `event: <type>` with the same type in its data. */
function frames(text: string): Json[] {
  assert.ok(text.endsWith("\n\n"), `the stream ends mid-frame: ${text.slice(-200)}`);
  return text.slice(0, -2).split("\n\n").map((frame) => {
    const match = /^event: (\w+)\ndata: (.*)$/s.exec(frame);
    assert.ok(match, `not an event frame: ${frame}`);
    const data = JSON.parse(match[2]);
    assert.equal(data.type, match[1]);
    return data;
  });
}

async function rawStream(gw: TestGateway, body: Json): Promise<Json[]> {
  const response = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
  return frames(await response.text()).filter((f) => f.type !== "ping");
}

const WEATHER: Anthropic.Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** Alias → the stop reason its vendor's finish reason must become. */
const STOPS: [alias: string, finish: string, stop: Anthropic.StopReason][] = [
  ["oa-ok", "stop", "end_turn"],
  ["oa-length", "length", "max_tokens"],
  ["oa-tools", "tool_calls", "tool_use"],
  ["oa-filter", "content_filter", "refusal"],
  ["gm-ok", "STOP", "end_turn"],
  ["gm-length", "MAX_TOKENS", "max_tokens"],
  ["gm-safety", "SAFETY", "refusal"],
  ["gm-tools", "STOP with a functionCall", "tool_use"],
  ["br-ok", "end_turn", "end_turn"],
  ["br-tools", "tool_use", "tool_use"],
];

Deno.test("messages stream: every vendor's finish reasons map to stop_reason, whole and streamed alike", async () => {
  await withGateway(async (gw, client) => {
    for (const [alias, finish, stop] of STOPS) {
      const label = `${alias} (${finish})`;
      const params = {
        model: alias,
        max_tokens: 200,
        tools: [WEATHER],
        messages: [{ role: "user" as const, content: "Weather in Paris?" }],
      };
      const whole = await client.messages.create(params);
      assert.equal(whole.stop_reason, stop, label);
      assert.equal(whole.stop_sequence, null, label);

      const events = await rawStream(gw, params);
      assert.equal(events[0].type, "message_start", label);
      const start = events[0].message as Anthropic.Message;
      assert.ok(start.usage.input_tokens > 0, `${label}: message_start carries the input tokens`);
      assert.equal(start.stop_reason, null, label);
      assert.deepEqual(events.slice(-2).map((e) => e.type), ["message_delta", "message_stop"], label);
      const delta = events.at(-2)!;
      assert.deepEqual(delta.delta, { stop_reason: stop, stop_sequence: null }, label);
      assert.ok((delta.usage as Anthropic.MessageDeltaUsage).output_tokens > 0, label);
      // The deltas rebuild the message `create` gave: the same text, the same tool calls.
      const text = events.filter((e) => e.type === "content_block_delta")
        .map((e) => (e.delta as { text?: string }).text ?? "").join("");
      const wholeText = whole.content.map((b) => b.type === "text" ? b.text : "").join("");
      assert.equal(text, wholeText, label);
      const tools = events.filter((e) => e.type === "content_block_start")
        .map((e) => (e.content_block as { type: string; name?: string }))
        .filter((b) => b.type === "tool_use").map((b) => b.name);
      assert.deepEqual(tools, whole.content.filter((b) => b.type === "tool_use").map((b) => b.name), label);

      // And the SDK builds the same ending from the stream.
      const final = await client.messages.stream(params).finalMessage();
      assert.equal(final.stop_reason, stop, label);
      assert.deepEqual(final.content.map((b) => b.type), whole.content.map((b) => b.type), label);
    }
  });
});

Deno.test("messages stream: a mid-stream cut ends with event: error, never message_stop; the SDK raises", async () => {
  await withGateway(async (gw, client) => {
    for (
      const [alias, type] of [
        ["oa-cut", "api_error"],
        ["gm-cut", "api_error"],
        ["br-cut", "api_error"],
        ["claude-cut", "overloaded_error"],
      ]
    ) {
      const params = { model: alias, max_tokens: 100, messages: [{ role: "user" as const, content: "Hi" }] };
      const events = await rawStream(gw, params);
      const types = events.map((e) => e.type);
      assert.equal(types[0], "message_start", alias);
      assert.ok(types.includes("content_block_delta"), `${alias}: the text before the cut was forwarded`);
      assert.equal(types.at(-1), "error", alias);
      assert.equal(types.filter((t) => t === "error").length, 1, alias);
      assert.ok(!types.includes("message_delta") && !types.includes("message_stop"), alias);
      assert.equal((events.at(-1)!.error as { type: string }).type, type, alias);

      const failure = await client.messages.stream(params).finalMessage().then(() => null, (e) => e);
      assert.ok(failure instanceof Anthropic.APIError, `${alias}: the SDK raises (${failure})`);
      assert.equal(failure.type, type, alias);
    }
  });
});

// --- chunk boundaries ----------------------------------------------------------------------------------------

const encoder = new TextEncoder();
const FRAME: MessageFrame = { id: "msg_split", alias: "coder", stopSequences: [], provider: "up" };

/** The client's bytes for one upstream body split into `pieces`, through `stages` and the client body. */
async function clientBytesTranslated(
  pieces: Uint8Array[],
  stage: () => ReturnType<typeof openAIChunkTransformer>,
): Promise<string> {
  const reader = (runStages(pieces, sseParseTransformer(), stage()) as ReadableStream<ChatCompletionChunk>)
    .getReader();
  const first = await reader.read();
  assert.ok(!first.done);
  const body = messagesStreamBody({ first: first.value, rest: reader }, {
    frame: FRAME,
    inputTokens: 17,
    startedAt: performance.now(),
    countUsage: (texts) =>
      Promise.resolve({
        prompt_tokens: 17,
        completion_tokens: texts.opening().length,
        total_tokens: 17 + texts.opening().length,
      }),
    onEnd: () => {},
  });
  return await new Response(body).text();
}

async function clientBytesNative(pieces: Uint8Array[]): Promise<string> {
  const reader = (runStages(pieces, sseParseTransformer(), anthropicEventTransformer("up")) as ReadableStream<
    JsonObject
  >).getReader();
  const first = await reader.read();
  assert.ok(!first.done);
  const body = nativeMessagesStreamBody({ first: first.value, rest: reader }, {
    alias: "coder",
    startedAt: performance.now(),
    onEnd: () => {},
  });
  return await new Response(body).text();
}

/** Splits `wire` at every byte offset (and byte by byte) and checks each gives the client `whole`. */
async function assertSplitInvariant(wire: Uint8Array, run: (pieces: Uint8Array[]) => Promise<string>) {
  const whole = await run([wire]);
  frames(whole);
  assert.ok(!whole.includes("event: error"), whole);
  for (let at = 1; at < wire.length; at++) {
    assert.equal(await run([wire.slice(0, at), wire.slice(at)]), whole, `split at byte ${at}`);
  }
  assert.equal(await run(Array.from(wire, (b) => Uint8Array.of(b))), whole, "byte by byte");
  return whole;
}

/** Gemini's `?alt=sse` body (CRLF line ends, no `[DONE]`): a thought, text with multi-byte characters, a call. */
const GEMINI_WIRE = encoder.encode(
  [
    {
      candidates: [{ content: { role: "model", parts: [{ text: "Thinking ☕ about it.", thought: true }] } }],
    },
    { candidates: [{ content: { role: "model", parts: [{ text: "Grüße aus Köln, " }] } }] },
    { candidates: [{ content: { role: "model", parts: [{ text: "café 👋 — voilà." }] } }] },
    {
      candidates: [{
        content: {
          role: "model",
          parts: [{ functionCall: { name: "get_weather", args: { city: "Zürich" } } }],
        },
        finishReason: "STOP",
      }],
      usageMetadata: { promptTokenCount: 21, candidatesTokenCount: 9, totalTokenCount: 30 },
    },
  ].map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(""),
);

Deno.test("messages stream: Gemini's bytes split at every offset give the client the same events", async () => {
  let n = 0;
  const stage = () => {
    n = 0;
    return geminiChunkTransformer({
      provider: "up",
      model: "gemini-2.5-flash",
      identity: { id: "chatcmpl-split", created: 1, model: "gemini-2.5-flash" },
      newId: () => `call_${++n}`,
    });
  };
  const whole = await assertSplitInvariant(GEMINI_WIRE, (pieces) => clientBytesTranslated(pieces, stage));
  const events = frames(whole);
  const deltas = events.filter((e) => e.type === "content_block_delta").map((e) => e.delta as Json);
  assert.equal(
    deltas.filter((d) => d.type === "thinking_delta").map((d) => d.thinking).join(""),
    "Thinking ☕ about it.",
  );
  assert.equal(
    deltas.filter((d) => d.type === "text_delta").map((d) => d.text).join(""),
    "Grüße aus Köln, café 👋 — voilà.",
  );
  assert.deepEqual(
    JSON.parse(deltas.filter((d) => d.type === "input_json_delta").map((d) => d.partial_json).join("")),
    {
      city: "Zürich",
    },
  );
  assert.deepEqual(events.at(-2)!.delta, { stop_reason: "tool_use", stop_sequence: null });
  assert.equal((events.at(-2)!.usage as Json).output_tokens, 9, "the upstream's own count");
});

/** An OpenAI-compatible stream: text with multi-byte characters, a tool call in fragments, usage, `[DONE]`. */
const OPENAI_WIRE = (() => {
  const chunk = (delta: Json, finish: string | null = null): Json => ({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks = [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Grüße " }),
    chunk({ content: "👋 café" }),
    chunk({
      tool_calls: [{ index: 0, id: "call_x", type: "function", function: { name: "f", arguments: "" } }],
    }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"q":"' } }] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: 'ü"}' } }] }),
    chunk({}, "tool_calls"),
    { ...chunk({}), choices: [], usage: { prompt_tokens: 17, completion_tokens: 6, total_tokens: 23 } },
  ];
  return encoder.encode(chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n");
})();

Deno.test("messages stream: an OpenAI-compatible stream split at every offset gives the client the same bytes", async () => {
  const whole = await assertSplitInvariant(
    OPENAI_WIRE,
    (pieces) => clientBytesTranslated(pieces, () => openAIChunkTransformer("up")),
  );
  const events = frames(whole);
  assert.equal(
    events.filter((e) => e.type === "content_block_delta").map((e) => (e.delta as Json).text ?? "").join(""),
    "Grüße 👋 café",
  );
  assert.deepEqual(events.at(-2)!.delta, { stop_reason: "tool_use", stop_sequence: null });
});

/** Anthropic's own stream: thinking with its signature, text with multi-byte characters, a ping, the end. */
const ANTHROPIC_WIRE = encoder.encode(
  [
    {
      type: "message_start",
      message: {
        id: "msg_up",
        type: "message",
        role: "assistant",
        model: "claude-x",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 31, output_tokens: 1 },
      },
    },
    {
      type: "content_block_start",
      index: 0,
      content_block: { type: "thinking", thinking: "", signature: "" },
    },
    { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Hmm ☕." } },
    { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQBsig==" } },
    { type: "content_block_stop", index: 0 },
    { type: "ping" },
    { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Grüße 👋" } },
    { type: "content_block_stop", index: 1 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 12 },
    },
    { type: "message_stop" },
  ].map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join(""),
);

Deno.test("messages stream: Anthropic's bytes split at every offset pass through natively the same", async () => {
  const whole = await assertSplitInvariant(ANTHROPIC_WIRE, clientBytesNative);
  const events = frames(whole);
  assert.equal((events[0].message as Json).model, "coder", "the alias as model");
  const deltas = events.filter((e) => e.type === "content_block_delta").map((e) => e.delta as Json);
  assert.deepEqual(deltas, [
    { type: "thinking_delta", thinking: "Hmm ☕." },
    { type: "signature_delta", signature: "EqQBsig==" },
    { type: "text_delta", text: "Grüße 👋" },
  ]);
  assert.equal(events.at(-1)!.type, "message_stop");
});
