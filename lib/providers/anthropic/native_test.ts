/**
 * The Anthropic adapter's native Messages pieces: the passed-through request (URL, version and beta headers, the
 * body untouched), the event stage (every event's object at every byte split, errors keeping Anthropic's type),
 * and counting a Messages body as sent.
 */
import assert from "node:assert/strict";
import type { AnthropicProviderConfig } from "../../config/schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { sseParseTransformer } from "../../sse/parse.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { MessagesCall } from "../types.ts";
import { anthropicAdapter } from "./adapter.ts";
import { anthropicEventTransformer, nativeMessagesHeaders } from "./native.ts";

const KEY = "sk-ant-native-key-0123456789";
const CONFIG: AnthropicProviderConfig = {
  type: "anthropic",
  base_url: "https://api.anthropic.com/",
  api_key: KEY,
  anthropic_version: "2023-06-01",
  default_max_tokens: 4096,
  headers: { "Anthropic-Beta": "operator-beta-1", "x-team": "t1" },
  timeouts: {},
  unsupported_params: "error",
};
const call = (version: string | null, beta: string | null): MessagesCall => ({
  target: { provider: "claude", model: "claude-sonnet-4-5" } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_1",
  anthropicVersion: version,
  anthropicBeta: beta,
});

const BODY = {
  model: "claude-sonnet-4-5",
  max_tokens: 2048,
  stream: true,
  system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
  thinking: { type: "enabled", budget_tokens: 1024 },
  messages: [
    { role: "user", content: "Hi" },
    {
      role: "assistant",
      content: [{ type: "thinking", thinking: "hmm", signature: "sig==" }, { type: "text", text: "Hello" }],
    },
    {
      role: "user",
      content: [{ type: "document", source: { type: "text", media_type: "text/plain", data: "x" } }],
    },
  ],
  context_management: { edits: [] },
};

Deno.test("anthropic native: POST {base}/v1/messages with the body as it is, the client's version and betas", () => {
  const adapter = anthropicAdapter(CONFIG);
  const request = adapter.messagesRequest!(
    BODY,
    call("2026-10-21", "interleaved-thinking-2025-05-14, operator-beta-1"),
  );
  assert.equal(request.url, "https://api.anthropic.com/v1/messages");
  assert.equal(request.body, JSON.stringify(BODY), "byte for byte: signatures, cache_control, beta fields");
  assert.equal(request.headers["anthropic-version"], "2026-10-21");
  assert.equal(request.headers["anthropic-beta"], "operator-beta-1,interleaved-thinking-2025-05-14");
  assert.equal(request.headers["x-team"], "t1");
  assert.equal(request.headers.accept, "text/event-stream");
  assert.equal("x-api-key" in request.headers, false, "the key is added by authorize, last");
  const authorized = adapter.authorize(request) as { headers: Record<string, string> };
  assert.equal(authorized.headers["x-api-key"], KEY);
});

Deno.test("anthropic native: without client headers, the configured version and the operator's betas only", () => {
  const headers = nativeMessagesHeaders({ ...CONFIG, headers: {} }, call(null, null), false);
  assert.equal(headers["anthropic-version"], "2023-06-01");
  assert.equal("anthropic-beta" in headers, false);
  assert.equal(headers.accept, "application/json");
  const operator = nativeMessagesHeaders(CONFIG, call(null, null), false);
  assert.equal(operator["anthropic-beta"], "operator-beta-1");
  assert.equal(Object.keys(operator).filter((k) => k.toLowerCase() === "anthropic-beta").length, 1);
  const pinned = nativeMessagesHeaders(
    { ...CONFIG, headers: { "Anthropic-Version": "2023-06-01" } },
    call("2026-10-21", null),
    false,
  );
  assert.equal(pinned["anthropic-version"], "2023-06-01", "an operator's header pins the version");
  assert.equal(Object.keys(pinned).filter((k) => k.toLowerCase() === "anthropic-version").length, 1);
});

/** A stream as Anthropic sends it: thinking with its signature, a ping, text, the end. */
const STREAM = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_up","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":25,"cache_read_input_tokens":300,"output_tokens":1}}}',
  'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Café ☕ "}}',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBsig=="}}',
  'event: ping\ndata: {"type": "ping"}',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}',
  'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}',
  'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}',
  'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}',
  'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}',
  'event: message_stop\ndata: {"type":"message_stop"}',
  'event: ping\ndata: {"type":"ping"}',
  "",
].join("\n\n");

async function events(text: string, split = 0): Promise<JsonObject[]> {
  const bytes = new TextEncoder().encode(text);
  const parts = split > 0 ? [bytes.slice(0, split), bytes.slice(split)] : [bytes];
  const out: JsonObject[] = [];
  for await (const e of runStages(parts, sseParseTransformer(), anthropicEventTransformer("claude", [KEY]))) {
    out.push(e);
  }
  return out;
}

async function failure(text: string): Promise<{ error: GatewayError; before: JsonObject[] }> {
  const before: JsonObject[] = [];
  try {
    for await (
      const e of runStages(
        [new TextEncoder().encode(text)],
        sseParseTransformer(),
        anthropicEventTransformer("claude", [KEY]),
      )
    ) before.push(e);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return { error: err, before };
  }
  throw new Error("the stream did not fail");
}

Deno.test("anthropic native: the event stage gives every event's object, pings too, at every byte split", async () => {
  const whole = await events(STREAM);
  assert.deepEqual(whole.map((e) => e.type), [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_delta",
    "ping",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ], "nothing after message_stop");
  assert.deepEqual(whole[3].delta, { type: "signature_delta", signature: "EqQBsig==" });
  assert.deepEqual((whole[2].delta as JsonObject).thinking, "Café ☕ ");
  const bytes = new TextEncoder().encode(STREAM).length;
  for (let at = 1; at < bytes; at++) assert.deepEqual(await events(STREAM, at), whole, `split at ${at}`);
});

Deno.test("anthropic native: an error event keeps Anthropic's type, scrubbed; a cut or a typeless event fails", async () => {
  const start = STREAM.split("\n\n")[0] + "\n\n";
  const overloaded = await failure(
    start +
      `event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded ${KEY}"}}\n\n`,
  );
  assert.equal(overloaded.before.length, 1, "events before the error were delivered");
  assert.equal(overloaded.error.anthropicType, "overloaded_error");
  assert.equal(overloaded.error.status, 503);
  assert.doesNotMatch(overloaded.error.message, /sk-ant-native/);

  const invented = await failure(
    start + 'event: error\ndata: {"type":"error","error":{"type":"made_up","message":"x"}}\n\n',
  );
  assert.equal(invented.error.anthropicType, null, "only Anthropic's documented types are kept");

  const cut = await failure(start);
  assert.equal(cut.error.status, 502);
  assert.match(cut.error.message, /before it was complete/);
  const typeless = await failure('data: {"index":0}\n\n');
  assert.equal(typeless.error.code, "upstream_invalid_response");
  const named = await events('event: message_stop\ndata: {"x":1}\n\n');
  assert.deepEqual(named, [{ x: 1, type: "message_stop" }], "the event line names a typeless event");
});

Deno.test("anthropic native: HTTP errors keep Anthropic's type, except the gateway's own credentials", () => {
  const adapter = anthropicAdapter(CONFIG);
  const body = (type: string) => JSON.stringify({ type: "error", error: { type, message: "m" } });
  assert.equal(
    adapter.httpError("claude", 529, body("overloaded_error"), new Headers()).anthropicType,
    "overloaded_error",
  );
  assert.equal(
    adapter.httpError("claude", 413, body("request_too_large"), new Headers()).anthropicType,
    "request_too_large",
  );
  assert.equal(
    adapter.httpError("claude", 401, body("authentication_error"), new Headers()).anthropicType,
    null,
  );
  assert.equal(adapter.httpError("claude", 500, "<html>", new Headers()).anthropicType, null);
});

Deno.test("anthropic native: a Messages body is counted as sent, with the target's model and the client's betas", () => {
  const adapter = anthropicAdapter(CONFIG);
  const messages = {
    model: "alias",
    system: [{ type: "text", text: "S", cache_control: { type: "ephemeral" } }],
    messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
    tools: [{ name: "t", input_schema: { type: "object" } }],
    thinking: { type: "enabled", budget_tokens: 2000 },
    max_tokens: 5,
  };
  const request = adapter.countTokensRequest!(
    {
      chat: { model: "alias", messages: [] },
      messages,
      anthropicVersion: "2026-10-21",
      anthropicBeta: "b-1",
    },
    call(null, null),
  )!;
  assert.equal(request.url, "https://api.anthropic.com/v1/messages/count_tokens");
  const { max_tokens: _, ...counted } = messages;
  assert.deepEqual(JSON.parse(String(request.body)), { ...counted, model: "claude-sonnet-4-5" });
  assert.equal(request.headers["anthropic-version"], "2026-10-21");
  assert.equal(request.headers["anthropic-beta"], "operator-beta-1,b-1");
});
