/**
 * A Bedrock stream that fails with a `modelStreamErrorException` carries the model's own status in
 * `originalStatusCode` (and its words in `originalMessage`), as AWS documents the exception: Claude's overload
 * relayed mid-stream is 529, its rate limit 429. Mapped as the HTTP answers with those statuses are, a Messages
 * client gets `overloaded_error` / `rate_limit_error` (a 529 / 429 before the stream commits), not `api_error`
 * and a 502; a `modelTimeoutException` is `timeout_error`. Converse streams (the chat API) map the same way.
 */
import assert from "node:assert/strict";
import { encodeFrame } from "../helpers/fake_bedrock.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";

const CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const START = {
  type: "message_start",
  message: {
    id: "msg_b",
    type: "message",
    role: "assistant",
    model: "m",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 1, output_tokens: 1 },
  },
};

function chunk(event: Record<string, unknown>): Uint8Array {
  const bytes = btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(event))));
  return encodeFrame(
    { ":message-type": "event", ":event-type": "chunk", ":content-type": "application/json" },
    JSON.stringify({ bytes }),
  );
}

function exception(type: string, payload: Record<string, unknown>): Uint8Array {
  return encodeFrame(
    { ":message-type": "exception", ":exception-type": type, ":content-type": "application/json" },
    JSON.stringify(payload),
  );
}

const TEXT = [
  chunk(START),
  chunk({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  chunk({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } }),
];
const CONVERSE_TEXT = [
  encodeFrame(
    { ":message-type": "event", ":event-type": "messageStart", ":content-type": "application/json" },
    JSON.stringify({ role: "assistant" }),
  ),
  encodeFrame(
    { ":message-type": "event", ":event-type": "contentBlockDelta", ":content-type": "application/json" },
    JSON.stringify({ contentBlockIndex: 0, delta: { text: "Hi" } }),
  ),
];

const OVERLOADED = { message: "Model stream error", originalStatusCode: 529, originalMessage: "Overloaded" };
const RATE_LIMITED = {
  message: "Model stream error",
  originalStatusCode: 429,
  originalMessage: "Rate limited",
};

async function withUpstream(frames: Uint8Array[], fn: (gw: TestGateway) => Promise<void>): Promise<void> {
  const upstream = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    await req.body?.cancel();
    const body = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let at = 0;
    for (const frame of frames) {
      body.set(frame, at);
      at += frame.length;
    }
    return new Response(body, { headers: { "content-type": "application/vnd.amazon.eventstream" } });
  });
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
routing: { eject_after: 1000 }
providers:
  aws:
    type: bedrock
    region: us-east-1
    base_url: "http://127.0.0.1:${upstream.addr.port}"
    access_key_id: AKIAFAKEFAKEFAKEFAKE
    secret_access_key: "fakesecretfakesecretfakesecretfakesecret"
models:
  chat-claude: { type: chat, targets: [ { provider: aws, model: "${CLAUDE}", retries: 0 } ] }
${TEST_TOKENS_YAML}`);
  try {
    await fn(gw);
  } finally {
    await gw.stop();
    await upstream.shutdown();
  }
}

async function post(gw: TestGateway, path: string, body: Record<string, unknown>) {
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": TEST_TOKEN,
      authorization: `Bearer ${TEST_TOKEN}`,
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({
      model: "chat-claude",
      max_tokens: 16,
      stream: true,
      messages: [{ role: "user", content: "Hi" }],
      ...body,
    }),
  });
  return { status: res.status, text: await res.text() };
}

/** The `error` of the last SSE event of a Messages stream. */
function lastError(text: string): Record<string, unknown> {
  const last = text.trim().split("\n\n").at(-1)!;
  assert.match(last, /^event: error\n/, last);
  return JSON.parse(last.slice(last.indexOf("data: ") + 6)).error;
}

Deno.test("bedrock stream status: a mid-stream model error says the model's overload or rate limit", async () => {
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [OVERLOADED, "overloaded_error", /Overloaded/],
    [{ ...OVERLOADED, originalStatusCode: 503 }, "overloaded_error", /Overloaded/],
    [RATE_LIMITED, "rate_limit_error", /Rate limited/],
    // Any other status stays an API error, in Bedrock's words.
    [
      { ...OVERLOADED, originalStatusCode: 500, originalMessage: "Internal" },
      "api_error",
      /Model stream error/,
    ],
  ];
  for (const [payload, type, says] of cases) {
    await withUpstream([...TEXT, exception("modelStreamErrorException", payload)], async (gw) => {
      const { status, text } = await post(gw, "/v1/messages", {});
      assert.equal(status, 200);
      const error = lastError(text);
      assert.equal(error.type, type, JSON.stringify(payload));
      assert.match(String(error.message), says);
    });
  }
});

Deno.test("bedrock stream status: a mid-stream model timeout is timeout_error", async () => {
  await withUpstream(
    [...TEXT, exception("modelTimeoutException", { message: "Model timed out" })],
    async (gw) => {
      const { text } = await post(gw, "/v1/messages", {});
      assert.equal(lastError(text).type, "timeout_error");
    },
  );
});

Deno.test("bedrock stream status: before the stream commits, the model's overload is a 529 (Messages), 503 (chat)", async () => {
  await withUpstream([exception("modelStreamErrorException", OVERLOADED)], async (gw) => {
    const messages = await post(gw, "/v1/messages", {});
    assert.equal(messages.status, 529, messages.text);
    assert.equal(JSON.parse(messages.text).error.type, "overloaded_error");
    // The Converse path: the chat API's stream to the same target.
    const chat = await post(gw, "/v1/chat/completions", {});
    assert.equal(chat.status, 503, chat.text);
    assert.equal(JSON.parse(chat.text).error.code, "upstream_overloaded");
  });
  await withUpstream([exception("modelStreamErrorException", RATE_LIMITED)], async (gw) => {
    const chat = await post(gw, "/v1/chat/completions", {});
    assert.equal(chat.status, 429, chat.text);
  });
});

Deno.test("bedrock stream status: a committed Converse stream ends with the model's rate limit", async () => {
  await withUpstream([...CONVERSE_TEXT, exception("modelStreamErrorException", RATE_LIMITED)], async (gw) => {
    const chat = await post(gw, "/v1/chat/completions", {});
    assert.equal(chat.status, 200);
    assert.match(chat.text, /"type":"rate_limit_error"/);
  });
});
