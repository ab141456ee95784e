/**
 * The GenAI span of an answer passed through natively (a Messages request to a Claude target, a Responses request
 * to a `native_responses` target, a Gemini request to a Gemini target) carries what docs/observability.md lists,
 * as the same alias's translated answer does: `gen_ai.response.id`, `gen_ai.response.finish_reasons` in the chat
 * form's words, with capture on `gen_ai.output.messages`, and the usage classes the upstream reported
 * (`gen_ai.usage.cache_read.input_tokens`, reasoning output). Over real sockets, into an OTLP receiver.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CACHE_USAGE,
  FAKE_CLAUDE_ANSWER,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  FAKE_GEMINI_KEY,
  FAKE_GEMINI_THOUGHT,
  FAKE_GEMINI_THOUGHT_TOKENS,
  GEMINI_ANSWER,
  startFakeGemini,
} from "../helpers/fake_gemini.ts";
import {
  NATIVE_ANSWER,
  NATIVE_KEY,
  NATIVE_SUMMARY,
  NATIVE_USAGE,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { startFakes } from "../helpers/fakes.ts";
import { startRawUpstream } from "../helpers/raw_upstream.ts";
import { startGateway, TEST_TOKEN, type TestGateway } from "../helpers/gateway.ts";
import { type DecodedSpan, type OtlpReceiver, startOtlpReceiver } from "../helpers/otlp_receiver.ts";

const REASONING = "gen_ai.usage.output_tokens.reasoning";
const CACHE_READ = "gen_ai.usage.cache_read.input_tokens";

type Upstreams = {
  anthropic: ReturnType<typeof startFakeAnthropic>;
  native: ReturnType<typeof startFakeNativeResponses>;
  gemini: ReturnType<typeof startFakeGemini>;
  raw: ReturnType<typeof startRawUpstream>;
};

async function withPassthrough(
  fn: (
    call: (path: string, headers: Record<string, string>, body: unknown) => Promise<Traced>,
    up: Upstreams,
  ) => Promise<void>,
): Promise<void> {
  const otlp = startOtlpReceiver();
  const up = startFakes({
    anthropic: startFakeAnthropic,
    native: startFakeNativeResponses,
    gemini: startFakeGemini,
    raw: startRawUpstream,
  });
  let gw: TestGateway | undefined;
  try {
    gw = await startGateway(`
telemetry:
  otlp: { endpoint: "${otlp.url}", interval: 50ms }
  capture_content: true
providers:
  claude: { type: anthropic, base_url: "${up.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  native: { type: openai, base_url: "${up.native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
  gem: { type: gemini, base_url: "${up.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  rawgem: { type: gemini, base_url: "${up.raw.url}/v1beta", api_key: "${FAKE_GEMINI_KEY}" }
models:
  claude: { type: chat, targets: [{ provider: claude, model: claude-ok }] }
  claude-tools: { type: chat, targets: [{ provider: claude, model: claude-tools }] }
  resp: { type: chat, targets: [{ provider: native, model: resp-ok }] }
  resp-length: { type: chat, targets: [{ provider: native, model: resp-length }] }
  gem: { type: chat, targets: [{ provider: gem, model: gem-ok }] }
  gem-tools: { type: chat, targets: [{ provider: gem, model: gem-tools }] }
  gem-cached: { type: chat, targets: [{ provider: rawgem, model: gem-cached, retries: 0 }] }
tokens:
  - { name: one, sha256: ${hashToken(TEST_TOKEN)}, models: ["*"] }
`);
    await fn((path, headers, body) => traced(gw!, otlp, path, headers, body), up);
  } finally {
    await gw?.stop();
    await up.stop();
    await otlp.stop();
  }
}

/** A request's answer and the GenAI span of its call. */
interface Traced {
  status: number;
  text: string;
  call: DecodedSpan;
}

/** Sends one request, reads its whole answer and waits for its trace's GenAI span (`chat …`, `generate_content …`). */
async function traced(
  gw: TestGateway,
  otlp: OtlpReceiver,
  path: string,
  headers: Record<string, string>,
  body: unknown,
): Promise<Traced> {
  const before = new Set(otlp.spans().filter((s) => s.kind === "SERVER").map((s) => s.traceId));
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const isNew = (s: DecodedSpan) => s.kind === "SERVER" && !before.has(s.traceId);
  const server = (await otlp.waitForSpans((spans) => spans.some(isNew))).find(isNew)!;
  const operation = path.startsWith("/v1beta/") ? "generate_content " : "chat ";
  const isCall = (s: DecodedSpan) => s.traceId === server.traceId && s.name.startsWith(operation);
  const call = (await otlp.waitForSpans((spans) => spans.some(isCall))).find(isCall)!;
  return { status: res.status, text, call };
}

/** The content of the captured output messages' parts of `type`: `text` (the answer) or `reasoning`. */
function output(call: DecodedSpan, type = "text"): string {
  const captured = call.attributes["gen_ai.output.messages"];
  assert.equal(typeof captured, "string", `gen_ai.output.messages in ${JSON.stringify(call.attributes)}`);
  const messages = JSON.parse(String(captured)) as {
    role: string;
    parts: { type: string; content: string }[];
  }[];
  assert.equal(messages[0].role, "assistant");
  return messages.flatMap((m) => m.parts.filter((p) => p.type === type).map((p) => p.content)).join("");
}

const MESSAGES = { authorization: `Bearer ${TEST_TOKEN}`, "anthropic-version": "2023-06-01" };
const CACHED_SYSTEM = [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }];

Deno.test("telemetry, native Messages: a whole answer's span has its id, finish reason, output and cache reads", async () => {
  await withPassthrough(async (call) => {
    const { status, text, call: span } = await call("/v1/messages", MESSAGES, {
      model: "claude",
      max_tokens: 50,
      system: CACHED_SYSTEM,
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(status, 200, text);
    const message = JSON.parse(text);
    assert.equal(span.attributes["gen_ai.response.id"], message.id);
    assert.deepEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.equal(output(span), FAKE_CLAUDE_ANSWER);
    assert.equal(span.attributes[CACHE_READ], FAKE_CACHE_USAGE.cache_read_input_tokens);
  });
});

Deno.test("telemetry, native Messages: a stream's span has its id, finish reason, output and cache reads", async () => {
  await withPassthrough(async (call) => {
    const { status, text, call: span } = await call("/v1/messages", MESSAGES, {
      model: "claude",
      max_tokens: 50,
      stream: true,
      system: CACHED_SYSTEM,
      messages: [{ role: "user", content: "Hi" }],
    });
    assert.equal(status, 200, text);
    const start = JSON.parse(text.split("\n").find((l) => l.includes('"message_start"'))!.slice(5));
    assert.equal(span.attributes["gen_ai.response.id"], start.message.id);
    assert.deepEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.equal(output(span), FAKE_CLAUDE_ANSWER);
    assert.equal(span.attributes[CACHE_READ], FAKE_CACHE_USAGE.cache_read_input_tokens);
    const tools = await call("/v1/messages", MESSAGES, {
      model: "claude-tools",
      max_tokens: 50,
      stream: true,
      messages: [{ role: "user", content: "Weather?" }],
    });
    assert.equal(tools.status, 200, tools.text);
    assert.deepEqual(tools.call.attributes["gen_ai.response.finish_reasons"], ["tool_calls"]);
  });
});

Deno.test("telemetry, native Responses: a stream's span has the upstream's id, finish reason, output and usage classes", async () => {
  await withPassthrough(async (call, up) => {
    const headers = { authorization: `Bearer ${TEST_TOKEN}` };
    const { status, text, call: span } = await call("/v1/responses", headers, {
      model: "resp",
      input: "Hi",
      stream: true,
    });
    assert.equal(status, 200, text);
    const id = span.attributes["gen_ai.response.id"];
    assert.ok(up.native.made.has(String(id)), `${id}: the upstream's Response id`);
    assert.deepEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    // The answer's text; its reasoning summary, output the model wrote too, in a part of its own.
    assert.equal(output(span), NATIVE_ANSWER);
    assert.equal(output(span, "reasoning"), NATIVE_SUMMARY);
    assert.equal(span.attributes[CACHE_READ], NATIVE_USAGE.cached);
    assert.equal(span.attributes[REASONING], NATIVE_USAGE.reasoning);
    const cut = await call("/v1/responses", headers, { model: "resp-length", input: "Hi", stream: true });
    assert.equal(cut.status, 200, cut.text);
    assert.deepEqual(cut.call.attributes["gen_ai.response.finish_reasons"], ["length"]);
  });
});

Deno.test("telemetry, native Gemini: a stream's span has its id, finish reason, output and usage classes", async () => {
  await withPassthrough(async (call, up) => {
    const headers = { "x-goog-api-key": TEST_TOKEN };
    const contents = [{ role: "user", parts: [{ text: "Hi" }] }];
    const { status, text, call: span } = await call(
      "/v1beta/models/gem:streamGenerateContent?alt=sse",
      headers,
      { contents, generationConfig: { thinkingConfig: { includeThoughts: true } } },
    );
    assert.equal(status, 200, text);
    assert.equal(span.attributes["gen_ai.response.id"], "fakeResponseId");
    assert.deepEqual(span.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.equal(output(span), GEMINI_ANSWER);
    assert.equal(output(span, "reasoning"), FAKE_GEMINI_THOUGHT);
    assert.equal(span.attributes[REASONING], FAKE_GEMINI_THOUGHT_TOKENS);
    const tools = await call("/v1beta/models/gem-tools:streamGenerateContent?alt=sse", headers, { contents });
    assert.equal(tools.status, 200, tools.text);
    assert.deepEqual(tools.call.attributes["gen_ai.response.finish_reasons"], ["tool_calls"]);
    // Cached content, which Gemini counts within the prompt.
    const chunk = (part: Record<string, unknown>) =>
      `data: ${JSON.stringify({ responseId: "rawId", ...part })}\r\n\r\n`;
    up.raw.next = {
      headers: { "content-type": "text/event-stream" },
      chunks: [
        chunk({ candidates: [{ content: { role: "model", parts: [{ text: "Hel" }] }, index: 0 }] }),
        chunk({
          candidates: [{
            content: { role: "model", parts: [{ text: "lo" }] },
            finishReason: "MAX_TOKENS",
            index: 0,
          }],
          usageMetadata: { promptTokenCount: 900, cachedContentTokenCount: 800, candidatesTokenCount: 2 },
        }),
      ],
    };
    const cached = await call("/v1beta/models/gem-cached:streamGenerateContent?alt=sse", headers, {
      contents,
    });
    assert.equal(cached.status, 200, cached.text);
    assert.equal(cached.call.attributes["gen_ai.response.id"], "rawId");
    assert.deepEqual(cached.call.attributes["gen_ai.response.finish_reasons"], ["length"]);
    assert.equal(cached.call.attributes[CACHE_READ], 800);
    assert.equal(output(cached.call), "Hello");
  });
});
