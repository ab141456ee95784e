/**
 * With content capture on, a reasoning model's answer (an OpenAI-compatible upstream's `reasoning_content`, as
 * DeepSeek and vLLM send it) is captured in `gen_ai.output.messages` as the conventions' parts: the answer's text
 * as the `text` part, the reasoning in a `reasoning` part of its own, never glued in front of the answer. The
 * same for every client API the answer is translated to (chat completions, Responses, Messages, Gemini), JSON or
 * streamed. The gateway's own token count of the same answer still counts the reasoning
 * (tests/chat/reasoning_usage_test.ts).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import { startGateway, TEST_TOKEN } from "../helpers/gateway.ts";
import { type DecodedSpan, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const ANSWER = "Hi there.";
const REASONING = "The user greets me; answer briefly.";

/** An OpenAI-compatible upstream that reasons ({@linkcode REASONING}), then answers {@linkcode ANSWER}, without usage. */
function startReasoningUpstream() {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const base = { id: "chatcmpl-r", created: 1, model: "m" };
    if (body.stream !== true) {
      const message = { role: "assistant", content: ANSWER, reasoning_content: REASONING };
      return Response.json({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: "stop" }],
      });
    }
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          ...base,
          object: "chat.completion.chunk",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const sse = [
      chunk({ role: "assistant", content: "" }),
      chunk({ reasoning_content: REASONING.slice(0, 12) }),
      chunk({ reasoning_content: REASONING.slice(12) }),
      chunk({ content: ANSWER.slice(0, 3) }),
      chunk({ content: ANSWER.slice(3) }),
      chunk({}, "stop"),
      "data: [DONE]\n\n",
    ];
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

/** One client API's request for `stream`: its path, headers and body. */
type Ask = (stream: boolean) => { path: string; headers: Record<string, string>; body: unknown };

const BEARER = { authorization: `Bearer ${TEST_TOKEN}` };
const APIS: Record<string, Ask> = {
  "chat completions": (stream) => ({
    path: "/v1/chat/completions",
    headers: BEARER,
    body: { model: "reasoner", stream, messages: [{ role: "user", content: "Hello" }] },
  }),
  responses: (stream) => ({
    path: "/v1/responses",
    headers: BEARER,
    body: { model: "reasoner", stream, input: "Hello", store: false },
  }),
  messages: (stream) => ({
    path: "/v1/messages",
    headers: { ...BEARER, "anthropic-version": "2023-06-01" },
    body: { model: "reasoner", stream, max_tokens: 100, messages: [{ role: "user", content: "Hello" }] },
  }),
  gemini: (stream) => ({
    path: stream
      ? "/v1beta/models/reasoner:streamGenerateContent?alt=sse"
      : "/v1beta/models/reasoner:generateContent",
    headers: { "x-goog-api-key": TEST_TOKEN },
    body: {
      contents: [{ role: "user", parts: [{ text: "Hello" }] }],
      generationConfig: { thinkingConfig: { includeThoughts: true } },
    },
  }),
};

/** The captured output messages of `call`. */
function outputOf(call: DecodedSpan): { role: string; parts: { type: string; content: string }[] }[] {
  const captured = call.attributes["gen_ai.output.messages"];
  assert.equal(typeof captured, "string", `gen_ai.output.messages in ${JSON.stringify(call.attributes)}`);
  return JSON.parse(String(captured));
}

Deno.test("telemetry capture: a reasoning answer's text part is the answer, its reasoning a part of its own, in every client API, JSON or streamed", async () => {
  const otlp = startOtlpReceiver();
  const up = startReasoningUpstream();
  const gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
  capture_content: true
providers:
  up: { type: openai, base_url: "${up.baseURL}", api_key: sk-reasoning-0123456789 }
models:
  reasoner: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
  try {
    for (const [api, ask] of Object.entries(APIS)) {
      for (const stream of [false, true]) {
        const what = `${api}, ${stream ? "stream" : "JSON"}`;
        const traceId = crypto.randomUUID().replaceAll("-", "");
        const { path, headers, body } = ask(stream);
        const res = await fetch(`${gw.url}${path}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
            ...headers,
          },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        assert.equal(res.status, 200, `${what}: ${text}`);
        assert.ok(text.includes("Hi"), `${what}: ${text}`);
        // The conventions' operation of a Gemini generateContent is generate_content, of every other chat.
        const name = api === "gemini" ? "generate_content reasoner" : "chat reasoner";
        const isCall = (s: DecodedSpan) => s.traceId === traceId && s.name === name;
        const call = (await otlp.waitForSpans((spans) => spans.some(isCall))).find(isCall)!;
        assert.deepEqual(outputOf(call), [{
          role: "assistant",
          parts: [{ type: "text", content: ANSWER }, { type: "reasoning", content: REASONING }],
        }], what);
      }
    }
  } finally {
    await gw.stop();
    await up.stop();
    await otlp.stop();
  }
});
