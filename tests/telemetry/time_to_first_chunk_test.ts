/**
 * The time to the first chunk (`ttft_ms` in the usage record, the TTFT metric and the access log) is measured in
 * one place, the stream body every client API builds on (lib/answer/stream_body.ts). Here every streamed form
 * is followed end to end over a real socket: chat completions, Responses, Messages and Gemini, each translated
 * over the chat form and, where a target speaks the API, passed through natively. Each record of a stream
 * carries a time to its first chunk within its latency; a whole answer carries none.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_GEMINI_KEY, startFakeGemini } from "../helpers/fake_gemini.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { NATIVE_KEY, startFakeNativeResponses } from "../helpers/fake_openai_responses.ts";
import { startFakes } from "../helpers/fakes.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

interface Row {
  endpoint: string;
  provider: string | null;
  stream: number;
  status: number;
  latency_ms: number;
  ttft_ms: number | null;
}

const HI = "Say hi";
const chatBody = (model: string, stream: boolean) => ({
  model,
  stream,
  messages: [{ role: "user", content: HI }],
});
const geminiBody = { contents: [{ role: "user", parts: [{ text: HI }] }] };

/** Each request: its path, headers and body, and the record's endpoint and provider. */
const REQUESTS: {
  name: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  record: string;
}[] = [
  {
    name: "chat, streamed",
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: chatBody("chat-gpt", true),
    record: "chat/oai/1",
  },
  {
    name: "chat, whole",
    path: "/v1/chat/completions",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: chatBody("chat-gpt", false),
    record: "chat/oai/0",
  },
  {
    name: "Responses, translated",
    path: "/v1/responses",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: { model: "chat-gpt", input: HI, stream: true },
    record: "responses/oai/1",
  },
  {
    name: "Responses, native",
    path: "/v1/responses",
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    body: { model: "chat-native", input: HI, stream: true },
    record: "responses/native/1",
  },
  {
    name: "Messages, translated",
    path: "/v1/messages",
    headers: { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" },
    body: { ...chatBody("chat-gpt", true), max_tokens: 50 },
    record: "messages/oai/1",
  },
  {
    name: "Messages, native",
    path: "/v1/messages",
    headers: { "x-api-key": TEST_TOKEN, "anthropic-version": "2023-06-01" },
    body: { ...chatBody("chat-claude", true), max_tokens: 50 },
    record: "messages/claude/1",
  },
  {
    name: "Gemini, translated",
    path: "/v1beta/models/chat-gpt:streamGenerateContent?alt=sse",
    headers: { "x-goog-api-key": TEST_TOKEN },
    body: geminiBody,
    record: "gemini/oai/1",
  },
  {
    name: "Gemini, native",
    path: "/v1beta/models/chat-gem:streamGenerateContent?alt=sse",
    headers: { "x-goog-api-key": TEST_TOKEN },
    body: geminiBody,
    record: "gemini/gem/1",
  },
];

Deno.test("time to first chunk: every streamed client API records it within its latency; a whole answer none", async () => {
  const fakes = startFakes({
    openai: startFakeOpenAI,
    native: startFakeNativeResponses,
    anthropic: startFakeAnthropic,
    gemini: startFakeGemini,
  });
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  oai: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
  native: { type: openai, base_url: "${fakes.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  claude: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  gem: { type: gemini, base_url: "${fakes.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
models:
  chat-gpt: { type: chat, targets: [{ provider: oai, model: gpt-4o-mini }] }
  chat-native: { type: chat, targets: [{ provider: native, model: gpt-4o-mini }] }
  chat-claude: { type: chat, targets: [{ provider: claude, model: claude-sonnet-4-5 }] }
  chat-gem: { type: chat, targets: [{ provider: gem, model: gem-ok }] }
${TEST_TOKENS_YAML}`);
  try {
    for (const request of REQUESTS) {
      const res = await fetch(`${gw.url}${request.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...request.headers },
        body: JSON.stringify(request.body),
      });
      const text = await res.text();
      assert.equal(res.status, 200, `${request.name}: ${text.slice(0, 300)}`);
    }
    const rows = await pollUsageRows<Row>(gw, (r) => r.length >= REQUESTS.length);
    assert.equal(rows.length, REQUESTS.length, "one record per request");
    const byKey = new Map(rows.map((r) => [`${r.endpoint}/${r.provider}/${r.stream}`, r]));
    for (const request of REQUESTS) {
      const row = byKey.get(request.record);
      assert.ok(row, `${request.name}: a record ${request.record} among ${[...byKey.keys()].join(", ")}`);
      if (request.record.endsWith("/0")) {
        assert.equal(row.ttft_ms, null, `${request.name}: a whole answer has no first chunk`);
        continue;
      }
      assert.equal(typeof row.ttft_ms, "number", `${request.name}: the time to the first chunk is recorded`);
      assert.ok(row.ttft_ms! > 0, `${request.name}: ${row.ttft_ms} > 0`);
      assert.ok(
        row.ttft_ms! <= row.latency_ms,
        `${request.name}: ${row.ttft_ms} ≤ latency ${row.latency_ms}`,
      );
    }
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});
