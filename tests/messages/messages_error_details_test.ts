/**
 * An Anthropic upstream's `error.details` reaches a client of the Messages API. Anthropic's SDK (1.12 on) picks
 * the error's class by `${status} ${error.details.error_code}` (`400 image_dimensions_too_large` →
 * `ImageDimensionsTooLargeError`) and exposes `errorCode` and `details`: without them a client gets a plain
 * `BadRequestError` and cannot tell the failure from any other 400. The details are upstream text: bounded, and
 * scrubbed of every secret in the config, as the message is. The gateway's own rewording of the upstream's
 * refusal of its key (401/403) carries none, and OpenAI's error shape (chat completions) has no place for them.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { fetchThrough, type InProcessGateway } from "../helpers/in_process.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

const ANT_KEY = "sk-ant-key-abcdef0123456789";
const OTHER_KEY = "sk-other-key-fedcba9876543210";
const DETAILS = { error_code: "image_dimensions_too_large", max_dimension: 8000 };

/** Anthropic's error body with `details`. */
function errorBody(type: string, message: string, details: unknown) {
  return { type: "error", error: { type, message, details }, request_id: "req_011" };
}

function jsonStep(status: number, body: unknown): RawStep {
  return { status, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] };
}

function withGateway(fn: (gw: InProcessGateway, up: RawUpstream, sdk: Anthropic) => Promise<void>) {
  return withInProcessGateway(() => {
    const up = startRawUpstream();
    return {
      fakes: up,
      config: `
providers:
  ant: { type: anthropic, base_url: "${up.url}", api_key: "${ANT_KEY}" }
  other: { type: openai, base_url: "${up.url}/v1", api_key: "${OTHER_KEY}" }
models:
  chat-claude: { type: chat, targets: [ { provider: ant, model: claude-sonnet-4-5, retries: 0 } ] }
  chat-other: { type: chat, targets: [ { provider: other, model: gpt-x, retries: 0 } ] }
${TEST_TOKENS_YAML}`,
    };
  }, (gw, up) => {
    const sdk = new Anthropic({
      apiKey: TEST_TOKEN,
      baseURL: "http://gateway.test",
      maxRetries: 0,
      fetch: fetchThrough(gw),
    });
    return fn(gw, up, sdk);
  });
}

const MESSAGE = {
  model: "chat-claude",
  max_tokens: 16,
  messages: [{ role: "user" as const, content: "hi" }],
};

Deno.test("error details: Anthropic's SDK gets its typed error and errorCode, asked for JSON or a stream", async () => {
  await withGateway(async (_gw, up, sdk) => {
    up.next = jsonStep(400, errorBody("invalid_request_error", "Image too large.", DETAILS));
    for (const stream of [false, true]) {
      const err = await sdk.messages.create({ ...MESSAGE, stream }).then(() => null, (e) => e);
      assert.ok(err instanceof Anthropic.ImageDimensionsTooLargeError, `stream ${stream}: ${err}`);
      assert.equal(err.errorCode, "image_dimensions_too_large");
      assert.deepEqual(err.details, DETAILS);
      assert.equal(err.type, "invalid_request_error");
    }
  });
});

Deno.test("error details: an upstream 529 with an error_code is the SDK's typed 529", async () => {
  await withGateway(async (_gw, up, sdk) => {
    const details = { error_code: "compaction_unavailable" };
    up.next = jsonStep(529, errorBody("overloaded_error", "Compaction is unavailable.", details));
    const err = await sdk.messages.create(MESSAGE).then(() => null, (e) => e);
    assert.ok(err instanceof Anthropic.CompactionUnavailableError, String(err));
    assert.equal(err.errorCode, "compaction_unavailable");
  });
});

Deno.test("error details: an error event mid-stream keeps them, so the SDK's error has its errorCode", async () => {
  await withGateway(async (_gw, up, sdk) => {
    const start = {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [],
        stop_reason: null,
        usage: { input_tokens: 3, output_tokens: 0 },
      },
    };
    const block = { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } };
    const delta = { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hel" } };
    const failure = errorBody("invalid_request_error", "Tool name conflict.", {
      error_code: "tool_name_conflict",
    });
    const frame = (event: { type: string }) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
    up.next = {
      status: 200,
      headers: { "content-type": "text/event-stream" },
      chunks: [frame(start) + frame(block) + frame(delta), frame(failure)],
    };
    const stream = await sdk.messages.create({ ...MESSAGE, stream: true });
    const err = await (async () => {
      for await (const _event of stream) { /* read to the end */ }
    })().then(() => null, (e) => e);
    assert.ok(err instanceof Anthropic.APIError, String(err));
    assert.equal(err.status, undefined, "an error event, after the 200");
    assert.equal(err.errorCode, "tool_name_conflict");
  });
});

Deno.test("error details: every secret of the config is masked in them, values and keys; big ones keep error_code", async () => {
  await withGateway(async (gw, up) => {
    const leaky = {
      error_code: "invalid_key_echo",
      seen: `key ${ANT_KEY}`,
      [OTHER_KEY]: "rejected",
      nested: [OTHER_KEY],
    };
    const big = { error_code: "image_dimensions_too_large", padding: "x".repeat(5_000) };
    for (
      const [details, expected] of [[leaky, null], [big, {
        error_code: "image_dimensions_too_large",
      }]] as const
    ) {
      up.next = jsonStep(400, errorBody("invalid_request_error", "Refused.", details));
      const response = await gw.fetch("/v1/messages", {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
        },
        body: JSON.stringify(MESSAGE),
      });
      const text = await response.text();
      assert.equal(response.status, 400);
      assert.ok(!text.includes(ANT_KEY) && !text.includes(OTHER_KEY), text);
      assert.ok(!text.includes("abcdef01") && !text.includes("fedcba98"), `no run of a key: ${text}`);
      const sent = JSON.parse(text).error.details;
      if (expected !== null) assert.deepEqual(sent, expected);
      else assert.equal(sent.error_code, "invalid_key_echo");
    }
  });
});

Deno.test("error details: not on the gateway's own 401/403, nor in OpenAI's error shape", async () => {
  await withGateway(async (gw, up, sdk) => {
    for (const status of [401, 403]) {
      up.next = jsonStep(
        status,
        errorBody("permission_error", "No.", { error_code: "sandbox_egress_restricted" }),
      );
      const err = await sdk.messages.create(MESSAGE).then(() => null, (e) => e);
      assert.ok(err instanceof Anthropic.APIError, String(err));
      assert.equal(err.status, status);
      assert.equal(err.errorCode, null, `${status}: the gateway's own error`);
      assert.equal(err.details, null);
    }
    up.next = jsonStep(400, errorBody("invalid_request_error", "Image too large.", DETAILS));
    const response = await gw.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(MESSAGE),
    });
    const body = await response.json();
    assert.equal(response.status, 400);
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  });
});
