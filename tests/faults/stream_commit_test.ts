/**
 * A stream commits to its target only once it has shown the client something of the answer, over real sockets
 * against a scripted upstream: an upstream that answers 200, opens its stream (Anthropic's `message_start`,
 * Bedrock's `messageStart`, an OpenAI-compatible role-only chunk, Responses' `response.created`) and then fails
 * (Anthropic's documented `overloaded_error` right after `message_start`) is retried and falls back to the next
 * target, as a failure before the first event is, and the client sees one clean stream from the target that
 * answered: one role chunk, its text, `[DONE]`, no error. Each request leaves one usage record naming the target
 * that answered, and the failed attempts stay in the access log's `attempt_log`. Once the stream has shown
 * something, a failure still ends it with an error event and no fallback.
 */
import assert from "node:assert/strict";
import { FAKE_ANSWER, FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import {
  FAKE_ANTHROPIC_KEY,
  FAKE_CLAUDE_ANSWER,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import {
  type FakeNativeUpstream,
  NATIVE_ANSWER,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { eventFrame, exceptionFrame } from "../helpers/fake_bedrock.ts";
import { chunkFrame } from "../helpers/fake_bedrock_claude.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLog,
} from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

interface Upstreams {
  raw: RawUpstream;
  openai: FakeUpstream;
  anthropic: FakeAnthropic;
  responses: FakeNativeUpstream;
}

const AWS = `
    region: us-east-1
    base_url: "{RAW}"
    access_key_id: AKIACOMMITTESTEXAMPL
    secret_access_key: commitTestSecretAccessKey0123456789abcdef`;

function configFor(u: Upstreams): string {
  const raw = u.raw.url;
  const fallback = (provider: string, model: string, good: string) =>
    `{ type: chat, targets: [{ provider: ${provider}, model: "${model}", retries: 1 }, ${good}] }`;
  const chatGood = `{ provider: good, model: gpt-ok }`;
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  ant: { type: anthropic, base_url: "${raw}", api_key: "sk-ant-commit-key-0123456789abcdef" }
  bed:
    type: bedrock${AWS.replace("{RAW}", raw)}
  oai: { type: openai, base_url: "${raw}/v1", api_key: "sk-commit-raw-key-0123456789abcdef" }
  resp: { type: openai, base_url: "${raw}/v1", api_key: "sk-commit-raw-key-0123456789abcdef", native_responses: true }
  good: { type: openai, base_url: "${u.openai.baseURL}", api_key: "${FAKE_KEY}" }
  claude: { type: anthropic, base_url: "${u.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  respgood: { type: openai, base_url: "${u.responses.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-via-anthropic: ${fallback("ant", "claude-sonnet-4-5", chatGood)}
  chat-via-bedrock: ${fallback("bed", "amazon.nova-pro-v1:0", chatGood)}
  chat-via-openai: ${fallback("oai", "gpt-raw", chatGood)}
  chat-messages-anthropic: ${fallback("ant", "claude-sonnet-4-5", `{ provider: claude, model: claude-ok }`)}
  chat-messages-bedrock: ${
    fallback("bed", "anthropic.claude-sonnet-4-5-v1:0", `{ provider: claude, model: claude-ok }`)
  }
  chat-responses-native: ${fallback("resp", "resp-raw", `{ provider: respgood, model: resp-plain }`)}
${TEST_TOKENS_YAML}`;
}

async function withUpstreams(fn: (gw: TestGateway, u: Upstreams) => Promise<void>): Promise<void> {
  const u: Upstreams = {
    raw: startRawUpstream(),
    openai: startFakeOpenAI(),
    anthropic: startFakeAnthropic(),
    responses: startFakeNativeResponses(),
  };
  const gw = await startGateway(configFor(u));
  try {
    await fn(gw, u);
  } finally {
    await gw.stop();
    await Promise.all([u.raw.stop(), u.openai.stop(), u.anthropic.stop(), u.responses.stop()]);
  }
}

/** A streamed request to `path`; the whole body as text. */
async function post(gw: TestGateway, path: string, body: Record<string, unknown>) {
  const res = await fetch(`${gw.baseURL}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({ ...body, stream: true }),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const ask = (gw: TestGateway, model: string) =>
  post(gw, "/chat/completions", { model, messages: [{ role: "user", content: "Hi" }] });

/** The `data:` payloads of a chat stream, `[DONE]` as it is. */
function dataOf(text: string): unknown[] {
  return text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6)).map((d) =>
    d === "[DONE]" ? d : JSON.parse(d)
  );
}

/** Anthropic's SSE event. */
const anthropicEvent = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

const MESSAGE_START = {
  message: {
    id: "msg_raw_01",
    type: "message",
    role: "assistant",
    content: [],
    model: "claude-sonnet-4-5",
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1 },
  },
};
const OVERLOADED = { error: { type: "overloaded_error", message: "Overloaded" } };

/** Anthropic: `message_start`, an empty text block and a `ping`, then the overload. */
const ANTHROPIC_OVERLOAD: RawStep = {
  status: 200,
  headers: { "content-type": "text/event-stream" },
  chunks: [
    anthropicEvent("message_start", MESSAGE_START),
    anthropicEvent("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
    anthropicEvent("ping", {}),
    anthropicEvent("error", OVERLOADED),
  ],
};

/** A chat completion stream the client read: one clean stream from the fake OpenAI upstream. */
function assertCleanChat(text: string) {
  const data = dataOf(text);
  assert.equal(data.at(-1), "[DONE]", text);
  const chunks = data.slice(0, -1) as { choices: { delta: Record<string, unknown> }[]; error?: unknown }[];
  assert.ok(chunks.every((c) => c.error === undefined), text);
  const roles = chunks.filter((c) => c.choices[0]?.delta.role !== undefined);
  assert.equal(roles.length, 1, `one role chunk: ${text}`);
  assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? "").join(""), FAKE_ANSWER);
}

/** The request's access-log line and its one usage record: answered by `provider` after `outcomes`. */
async function assertRecorded(gw: TestGateway, alias: string, provider: string, outcomes: string[]) {
  const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === alias);
  assert.deepEqual((line.attempt_log as { outcome: string }[]).map((a) => a.outcome), outcomes);
  const rows = await pollUsageRows<Record<string, unknown>>(gw, (r) => r.length >= 1, {
    sql: "SELECT provider, attempts, status, error_code FROM usage WHERE alias = ?",
    params: [alias],
    settleMs: 100,
  });
  assert.deepEqual(rows.map((r) => ({ ...r })), [
    { provider, attempts: outcomes.length, status: 200, error_code: null },
  ]);
}

Deno.test("stream commit: Anthropic's overload after message_start falls back, the client sees one clean stream", async () => {
  await withUpstreams(async (gw, u) => {
    u.raw.next = ANTHROPIC_OVERLOAD;
    const res = await ask(gw, "chat-via-anthropic");
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get("x-gateway-provider"), "good");
    assertCleanChat(res.text);
    assert.equal(u.raw.requests.length, 2, "retried once on the same target");
    await assertRecorded(gw, "chat-via-anthropic", "good", [
      "upstream_overloaded",
      "upstream_overloaded",
      "ok",
    ]);
  });
});

Deno.test("stream commit: Bedrock's exception after messageStart falls back, the client sees one clean stream", async () => {
  await withUpstreams(async (gw, u) => {
    u.raw.next = {
      status: 200,
      headers: { "content-type": "application/vnd.amazon.eventstream" },
      chunks: [
        eventFrame("messageStart", { role: "assistant" }),
        exceptionFrame("serviceUnavailableException", "Bedrock is unable to process your request."),
      ],
    };
    const res = await ask(gw, "chat-via-bedrock");
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get("x-gateway-provider"), "good");
    assertCleanChat(res.text);
    assert.equal(u.raw.requests.length, 2);
    await assertRecorded(gw, "chat-via-bedrock", "good", [
      "upstream_overloaded",
      "upstream_overloaded",
      "ok",
    ]);
  });
});

Deno.test("stream commit: an OpenAI-compatible role chunk then an error event falls back, one clean stream", async () => {
  await withUpstreams(async (gw, u) => {
    const chunk = (delta: Record<string, unknown>) =>
      `data: ${
        JSON.stringify({
          id: "chatcmpl-raw",
          object: "chat.completion.chunk",
          created: 1_700_000_000,
          model: "gpt-raw",
          choices: [{ index: 0, delta, logprobs: null, finish_reason: null }],
        })
      }\n\n`;
    u.raw.next = {
      status: 200,
      headers: { "content-type": "text/event-stream" },
      chunks: [
        chunk({ role: "assistant", content: "", refusal: null }),
        `data: ${
          JSON.stringify({ error: { message: "The server had an error.", type: "server_error", code: null } })
        }\n\n`,
      ],
    };
    const res = await ask(gw, "chat-via-openai");
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get("x-gateway-provider"), "good");
    assertCleanChat(res.text);
    assert.equal(u.raw.requests.length, 2);
    await assertRecorded(gw, "chat-via-openai", "good", ["upstream_error", "upstream_error", "ok"]);

    // Once something was shown, the stream is the target's: a failure ends it with an error event.
    u.raw.requests.length = 0;
    const shown = structuredClone(u.raw.next);
    shown.chunks!.splice(1, 0, chunk({ content: "Part" }));
    u.raw.next = shown;
    const cut = await ask(gw, "chat-via-openai");
    assert.equal(cut.headers.get("x-gateway-provider"), "oai");
    assert.match(cut.text, /"Part"/);
    assert.match(cut.text, /"error"/);
    assert.ok(!cut.text.includes("[DONE]"));
    assert.equal(u.raw.requests.length, 1);
  });
});

Deno.test("stream commit: a native Messages stream's overload after message_start falls back (Anthropic, Claude on Bedrock)", async () => {
  await withUpstreams(async (gw, u) => {
    const messages = (model: string) =>
      post(gw, "/messages", { model, max_tokens: 64, messages: [{ role: "user", content: "Hi" }] });
    const check = (res: { status: number; text: string; headers: Headers }) => {
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get("x-gateway-provider"), "claude");
      const types = [...res.text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
      assert.equal(types.filter((t) => t === "message_start").length, 1, res.text);
      assert.ok(!types.includes("error"), res.text);
      assert.equal(types.at(-1), "message_stop");
      const text = [...res.text.matchAll(/"text_delta","text":"([^"]*)"/g)].map((m) => m[1]).join("");
      assert.equal(text, FAKE_CLAUDE_ANSWER);
    };

    u.raw.next = ANTHROPIC_OVERLOAD;
    check(await messages("chat-messages-anthropic"));
    assert.equal(u.raw.requests.length, 2);
    await assertRecorded(gw, "chat-messages-anthropic", "claude", [
      "upstream_overloaded",
      "upstream_overloaded",
      "ok",
    ]);

    u.raw.requests.length = 0;
    u.raw.next = {
      status: 200,
      headers: { "content-type": "application/vnd.amazon.eventstream" },
      chunks: [
        chunkFrame({ type: "message_start", ...MESSAGE_START }),
        chunkFrame({ type: "error", ...OVERLOADED }),
      ],
    };
    check(await messages("chat-messages-bedrock"));
    assert.equal(u.raw.requests.length, 2);
    assert.ok(
      u.raw.requests.every((r) => r.path.includes("invoke-with-response-stream")),
      u.raw.requests[0].path,
    );
  });
});

Deno.test("stream commit: a native Responses stream failing after response.created falls back; a failure about the request does not", async () => {
  await withUpstreams(async (gw, u) => {
    const frame = (data: Record<string, unknown>) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
    const response = (status: string, error: unknown = null) => ({
      id: "resp_raw_01",
      object: "response",
      created_at: 1_700_000_000,
      status,
      model: "resp-raw",
      output: [],
      error,
    });
    const opened = [
      frame({ type: "response.created", sequence_number: 0, response: response("in_progress") }),
      frame({ type: "response.in_progress", sequence_number: 1, response: response("in_progress") }),
    ];
    const respond = () => post(gw, "/responses", { model: "chat-responses-native", input: "Hi" });
    const check = (res: { status: number; text: string; headers: Headers }) => {
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get("x-gateway-provider"), "respgood");
      const types = [...res.text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
      assert.equal(types.filter((t) => t === "response.created").length, 1, res.text);
      assert.ok(!types.includes("error") && !types.includes("response.failed"), res.text);
      assert.equal(types.at(-1), "response.completed");
      assert.ok(res.text.includes(NATIVE_ANSWER));
    };
    const stream = (chunks: string[]): RawStep => ({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      chunks,
    });

    // An error event after the lifecycle events.
    u.raw.next = stream([
      ...opened,
      frame({ type: "error", code: "server_error", message: "The server had an error.", param: null }),
    ]);
    check(await respond());
    assert.equal(u.raw.requests.length, 2);

    // The response ended as failed by the upstream's own error.
    u.raw.requests.length = 0;
    const failed = (code: string) =>
      frame({
        type: "response.failed",
        sequence_number: 2,
        response: response("failed", { code, message: `Failed: ${code}.` }),
      });
    u.raw.next = stream([...opened, failed("server_error")]);
    check(await respond());
    assert.equal(u.raw.requests.length, 2);

    // A failure about the request would fail anywhere: it reaches the client as it came, from the first target.
    u.raw.requests.length = 0;
    u.raw.next = stream([...opened, failed("invalid_prompt")]);
    const refused = await respond();
    assert.equal(refused.status, 200, refused.text);
    assert.equal(refused.headers.get("x-gateway-provider"), "resp");
    assert.match(refused.text, /event: response\.failed/);
    assert.match(refused.text, /invalid_prompt/);
    assert.equal(u.raw.requests.length, 1);
  });
});
