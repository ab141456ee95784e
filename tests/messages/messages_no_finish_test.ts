/**
 * An OpenAI-compatible upstream's answer that gives no finish reason, through `POST /v1/messages`, over real
 * sockets. A stream whose chunks all say `finish_reason: null` before `data: [DONE]` is not known to have
 * finished, and Anthropic's stop reasons have none that says so: the client gets its text, then an `error` event
 * instead of `message_delta` and `message_stop` (the SDK's `finalMessage()` rejects), never a clean `end_turn`
 * that it, or a response cache, would take as the whole answer. A whole answer without one is a 502 `api_error`.
 * The same stream with its finish reason ends cleanly. Each request leaves one usage record, with the upstream's error.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import {
  dataEvents,
  jsonStep,
  type RawUpstream,
  sseStep,
  startRawUpstream,
} from "../helpers/raw_upstream.ts";
import { anthropicClient, withTestGateway } from "../helpers/with_gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";

function configFor(up: RawUpstream): string {
  return `
providers:
  oa: { type: openai, base_url: "${up.url}/v1", api_key: "sk-upstream-key-abcdef0123456789" }
models:
  chat-oa: { type: chat, targets: [ { provider: oa, model: m, retries: 0 } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, up: RawUpstream) => Promise<void>) {
  return withTestGateway(() => {
    const up = startRawUpstream();
    return { fakes: up, config: configFor(up) };
  }, fn);
}

const chunk = (delta: Record<string, unknown>, finish: string | null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const USAGE = {
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
  choices: [],
  usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
};

/** A stream of "part", ending with `finish` (null: no finish reason) and `[DONE]`. */
function stream(finish: string | null) {
  return sseStep(
    dataEvents([chunk({ role: "assistant", content: "part" }, null), chunk({}, finish), USAGE], true),
  );
}

function post(gw: TestGateway, stream: boolean) {
  return fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
    },
    body: JSON.stringify({
      model: "chat-oa",
      max_tokens: 10,
      stream,
      messages: [{ role: "user", content: "hi" }],
    }),
  });
}

/** The event types of an SSE body, in order. */
function eventTypes(text: string): string[] {
  return [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
}

/** The usage record of `requestId`, once it is stored: exactly one. */
async function record(gw: TestGateway, requestId: string | null): Promise<{ error_code: string | null }> {
  const rows = await pollUsageRows<{ error_code: string | null }>(gw, (r) => r.length > 0, {
    sql: "SELECT error_code FROM usage WHERE request_id = ?",
    params: [requestId],
    settleMs: 100,
  });
  assert.equal(rows.length, 1, `one record of ${requestId}`);
  return rows[0];
}

Deno.test("messages no finish reason: a translated stream that gave none ends with an error event, not end_turn", async () => {
  await withGateway(async (gw, up) => {
    up.next = stream(null);
    const answer = await post(gw, true);
    assert.equal(answer.status, 200);
    const text = await answer.text();
    const types = eventTypes(text);
    assert.deepEqual(types.slice(0, 3), ["message_start", "content_block_start", "content_block_delta"]);
    assert.match(text, /"text":"part"/, "what the upstream said reaches the client as it came");
    assert.equal(types.at(-1), "error", text);
    assert.ok(!types.includes("message_stop"), text);
    assert.doesNotMatch(text, /end_turn/);
    const error = JSON.parse(text.trim().split("\n").at(-1)!.replace(/^data: /, ""));
    assert.equal(error.error.type, "api_error");
    assert.match(error.error.message, /without a finish reason/);
    assert.equal((await record(gw, answer.headers.get("request-id"))).error_code, "upstream_error");

    // The SDK's stream helper rejects rather than resolve a final message.
    const client = anthropicClient(gw);
    const sdkStream = client.messages.stream({
      model: "chat-oa",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    });
    await assert.rejects(sdkStream.finalMessage(), /without a finish reason/);

    // The same stream with its finish reason ends cleanly.
    up.next = stream("stop");
    const clean = await post(gw, true);
    const cleanText = await clean.text();
    assert.deepEqual(eventTypes(cleanText).slice(-3), [
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    assert.match(cleanText, /"stop_reason":"end_turn"/);
    assert.equal((await record(gw, clean.headers.get("request-id"))).error_code, null);
  });
});

Deno.test("messages no finish reason: a whole translated answer that gave none is a 502 api_error", async () => {
  await withGateway(async (gw, up) => {
    up.next = jsonStep({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: 1,
      model: "m",
      choices: [{ index: 0, message: { role: "assistant", content: "part" }, finish_reason: null }],
      usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    });
    const answer = await post(gw, false);
    const body = await answer.json();
    assert.equal(answer.status, 502, JSON.stringify(body));
    assert.equal(body.type, "error");
    assert.equal(body.error.type, "api_error");
    assert.match(body.error.message, /without a finish reason/);
    assert.equal((await record(gw, answer.headers.get("request-id"))).error_code, "upstream_error");
  });
});
