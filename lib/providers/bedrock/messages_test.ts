/**
 * Claude on Bedrock through InvokeModel: the Messages body as Bedrock's Claude models take it (AWS's "Anthropic
 * Claude Messages API" parameters page: `anthropic_version: "bedrock-2023-05-31"`, `anthropic_beta`, no model in
 * the body), the URLs, the event-stream stage (chunk frames of base64 Anthropic events, at every byte split,
 * exceptions mapped), and CountTokens with `input.invokeModel`.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { BedrockProviderConfig } from "../../config/schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import { encodeFrame, exceptionFrame } from "../../../tests/helpers/fake_bedrock.ts";
import { chunkFrame } from "../../../tests/helpers/fake_bedrock_claude.ts";
import type { MessagesCall } from "../types.ts";
import { bedrockAdapter } from "./adapter.ts";
import { eventStreamTransformer } from "./eventstream.ts";
import { bedrockBetas } from "./betas.ts";
import {
  countMessagesBody,
  invokeChunkTransformer,
  invokeMessagesBody,
  servesMessages,
  versionReplaced,
} from "./messages.ts";

const CONFIG: BedrockProviderConfig = {
  type: "bedrock",
  region: "us-east-1",
  access_key_id: "AKIDTEST",
  secret_access_key: "testsecretvalue",
  headers: {},
  timeouts: {},
  unsupported_params: "error",
};
const MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const call = (beta: string | null = null): MessagesCall => ({
  target: { provider: "br", model: MODEL } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_1",
  anthropicVersion: "2026-10-21",
  anthropicBeta: beta,
});

const BODY = {
  model: MODEL,
  stream: true,
  max_tokens: 100,
  system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
  messages: [{ role: "user", content: "Hi" }],
  metadata: { user_id: "u-1" },
};

Deno.test("bedrock messages: Claude ids and inference profiles are served natively, others are not", () => {
  assert.equal(servesMessages("anthropic.claude-3-5-haiku-20241022-v1:0"), true);
  assert.equal(servesMessages(MODEL), true);
  assert.equal(
    servesMessages(
      "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-v1:0",
    ),
    true,
  );
  assert.equal(servesMessages("amazon.nova-pro-v1:0"), false);
  assert.equal(servesMessages("meta.llama3-70b-instruct-v1:0"), false);
});

Deno.test("bedrock messages: the body without model and stream, with Bedrock's version and the betas", () => {
  const { model: _m, stream: _s, ...rest } = BODY;
  assert.deepEqual(invokeMessagesBody(BODY, []), { anthropic_version: "bedrock-2023-05-31", ...rest });
  assert.deepEqual(invokeMessagesBody(BODY, ["a-1", "b-2"]).anthropic_beta, ["a-1", "b-2"]);
  const adapter = bedrockAdapter(CONFIG, {});
  const streamed = adapter.messagesRequest!(BODY, call("interleaved-thinking-2025-05-14"));
  assert.equal(
    streamed.url,
    "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream",
  );
  assert.deepEqual(JSON.parse(String(streamed.body)).anthropic_beta, ["interleaved-thinking-2025-05-14"]);
  const whole = adapter.messagesRequest!({ ...BODY, stream: false }, call());
  assert.match(whole.url, /\/invoke$/);
  assert.equal(whole.headers.accept, "application/json");
  assert.equal("anthropic_beta" in JSON.parse(String(whole.body)), false);
});

Deno.test("bedrock messages: the body's anthropic_version and anthropic_beta do not replace the gateway's", () => {
  const body = { ...BODY, anthropic_version: "something", anthropic_beta: ["not-allowed-beta"] };
  const invoked = invokeMessagesBody(body, []);
  assert.equal(invoked.anthropic_version, "bedrock-2023-05-31");
  assert.equal("anthropic_beta" in invoked, false);
  assert.equal(versionReplaced(body), true);
  assert.equal(versionReplaced({ ...BODY, anthropic_version: "bedrock-2023-05-31" }), false);
  assert.equal(versionReplaced(BODY), false);
  // Through the adapter: the header's and the body's names the entry takes, each once, header's first.
  const adapter = bedrockAdapter({
    ...CONFIG,
    anthropic_betas: ["effort-2025-11-24", "context-1m-2025-08-07"],
  }, {});
  const merged = {
    ...body,
    anthropic_beta: ["context-1m-2025-08-07", "effort-2025-11-24", "not-allowed-beta"],
  };
  const sent = JSON.parse(
    String(adapter.messagesRequest!(merged, call("effort-2025-11-24,oauth-2025-04-20")).body),
  );
  assert.deepEqual(sent.anthropic_beta, ["effort-2025-11-24", "context-1m-2025-08-07"]);
  assert.equal(sent.anthropic_version, "bedrock-2023-05-31");
});

Deno.test("bedrock messages: CountTokens gets the InvokeModel body, base64, with a max_tokens when it had none", () => {
  const counted = countMessagesBody({ model: MODEL, messages: [{ role: "user", content: "héllo" }] }, []);
  const encoded = (counted.input as { invokeModel: { body: string } }).invokeModel.body;
  assert.deepEqual(JSON.parse(Buffer.from(encoded, "base64").toString("utf8")), {
    anthropic_version: "bedrock-2023-05-31",
    max_tokens: 1,
    messages: [{ role: "user", content: "héllo" }],
  });
  // With a thinking budget, one above it (Claude refuses a max_tokens not above the budget); a request's own kept.
  const invoked = (body: JsonObject) => {
    const input = countMessagesBody(body, []).input as { invokeModel: { body: string } };
    return JSON.parse(Buffer.from(input.invokeModel.body, "base64").toString("utf8"));
  };
  const thinking = { type: "enabled", budget_tokens: 2048 };
  assert.equal(invoked({ thinking, messages: [] }).max_tokens, 2049);
  assert.equal(invoked({ thinking, max_tokens: 4096, messages: [] }).max_tokens, 4096);
  assert.equal(invoked({ thinking: { type: "adaptive" }, messages: [] }).max_tokens, 1);
  const adapter = bedrockAdapter(CONFIG, {});
  const request = adapter.countTokensRequest!(
    { chat: { model: "a", messages: [] }, messages: BODY },
    call(),
  )!;
  assert.match(request.url, /\/count-tokens$/);
  assert.ok("invokeModel" in (JSON.parse(String(request.body)).input as JsonObject));
  const other = {
    ...call(),
    target: { provider: "br", model: "amazon.nova-pro-v1:0" } as unknown as ResolvedTarget,
  };
  const converse = adapter.countTokensRequest!({
    chat: { model: "a", messages: [{ role: "user", content: "hi" }] },
    messages: BODY,
  }, other)!;
  assert.ok(
    "converse" in (JSON.parse(String(converse.body)).input as JsonObject),
    "non-Claude: Converse form",
  );
});

/** What Claude Code sends (recorded releases), names Bedrock takes and names it refuses mixed. */
const CLAUDE_CODE_BETAS =
  "claude-code-20250219, interleaved-thinking-2025-05-14,prompt-caching-scope-2026-01-05," +
  "effort-2025-11-24,oauth-2025-04-20,extended-cache-ttl-2025-04-11,fine-grained-tool-streaming-2025-05-14," +
  "context-management-2025-06-27,tool-search-tool-2025-10-19,claude-code-20250219";
const TAKEN = [
  "interleaved-thinking-2025-05-14",
  "effort-2025-11-24",
  "fine-grained-tool-streaming-2025-05-14",
  "context-management-2025-06-27",
  "tool-search-tool-2025-10-19",
];

function sentBetas(request: { body?: unknown }): unknown {
  return JSON.parse(String(request.body)).anthropic_beta;
}

function countedBetas(request: { body?: unknown }): unknown {
  const encoded =
    (JSON.parse(String(request.body)).input as { invokeModel: { body: string } }).invokeModel.body;
  return JSON.parse(Buffer.from(encoded, "base64").toString("utf8")).anthropic_beta;
}

Deno.test("bedrock messages: only the betas Bedrock takes reach InvokeModel and CountTokens (it refuses others)", () => {
  const adapter = bedrockAdapter(CONFIG, {});
  assert.deepEqual(sentBetas(adapter.messagesRequest!(BODY, call(CLAUDE_CODE_BETAS))), TAKEN);
  assert.deepEqual(
    sentBetas(adapter.messagesRequest!({ ...BODY, stream: false }, call(CLAUDE_CODE_BETAS))),
    TAKEN,
  );
  const count = adapter.countTokensRequest!(
    { chat: { model: "a", messages: [] }, messages: BODY, anthropicBeta: CLAUDE_CODE_BETAS },
    call(),
  )!;
  assert.deepEqual(countedBetas(count), TAKEN);
  // Nothing Bedrock takes: no `anthropic_beta` at all (an empty list is no beta either).
  const none = adapter.messagesRequest!(BODY, call("claude-code-20250219,oauth-2025-04-20"));
  assert.equal("anthropic_beta" in JSON.parse(String(none.body)), false);
  assert.deepEqual(bedrockBetas(CONFIG, CLAUDE_CODE_BETAS), {
    forwarded: TAKEN,
    dropped: [
      "claude-code-20250219",
      "prompt-caching-scope-2026-01-05",
      "oauth-2025-04-20",
      "extended-cache-ttl-2025-04-11",
    ],
  });
});

Deno.test("bedrock messages: an entry's anthropic_betas replaces the built-in list; [] forwards none", () => {
  const own = bedrockAdapter(
    { ...CONFIG, anthropic_betas: ["claude-code-20250219", "effort-2025-11-24"] },
    {},
  );
  assert.deepEqual(sentBetas(own.messagesRequest!(BODY, call(CLAUDE_CODE_BETAS))), [
    "claude-code-20250219",
    "effort-2025-11-24",
  ]);
  const off = bedrockAdapter({ ...CONFIG, anthropic_betas: [] }, {});
  assert.equal(
    "anthropic_beta" in JSON.parse(String(off.messagesRequest!(BODY, call(CLAUDE_CODE_BETAS)).body)),
    false,
  );
  assert.deepEqual(bedrockBetas({ ...CONFIG, anthropic_betas: [] }, "a-1, b-2,a-1").dropped, ["a-1", "b-2"]);
});

const EVENTS: JsonObject[] = [
  {
    type: "message_start",
    message: { id: "msg_bdrk_1", type: "message", usage: { input_tokens: 9, output_tokens: 1 } },
  },
  { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "ça ✓" } },
  { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "SIG==" } },
  { type: "content_block_stop", index: 0 },
  { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 4 } },
  { type: "message_stop", "amazon-bedrock-invocationMetrics": { inputTokenCount: 9, outputTokenCount: 4 } },
];

function bytesOf(frames: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(frames));
}

async function read(bytes: Uint8Array, split = 0): Promise<JsonObject[]> {
  const parts = split > 0 ? [bytes.slice(0, split), bytes.slice(split)] : [bytes];
  const out: JsonObject[] = [];
  const stages = [
    eventStreamTransformer({ provider: "br" }),
    invokeChunkTransformer("br", ["testsecretvalue"]),
  ] as const;
  for await (const e of runStages(parts, ...stages)) out.push(e);
  return out;
}

async function failure(bytes: Uint8Array): Promise<GatewayError> {
  try {
    await read(bytes);
  } catch (err) {
    assert.ok(err instanceof GatewayError);
    return err;
  }
  throw new Error("the stream did not fail");
}

Deno.test("bedrock messages: chunk frames → the Anthropic events, Bedrock's metrics left out, at every split", async () => {
  const other = encodeFrame({ ":event-type": "other", ":message-type": "event" }, "{}");
  const bytes = bytesOf([...EVENTS.slice(0, 2).map(chunkFrame), other, ...EVENTS.slice(2).map(chunkFrame)]);
  const whole = await read(bytes);
  assert.deepEqual(whole, [...EVENTS.slice(0, -1), { type: "message_stop" }]);
  for (let at = 1; at < bytes.length; at++) assert.deepEqual(await read(bytes, at), whole, `split at ${at}`);
});

Deno.test("bedrock messages: exceptions are mapped as for Converse, an error chunk keeps Anthropic's type", async () => {
  const start = chunkFrame(EVENTS[0]);
  const throttled = await failure(bytesOf([start, exceptionFrame("throttlingException", "slow down")]));
  assert.equal(throttled.status, 429);
  const broken = await failure(
    bytesOf([start, exceptionFrame("modelStreamErrorException", "key testsecretvalue")]),
  );
  assert.equal(broken.status, 502);
  assert.doesNotMatch(broken.message, /testsecretvalue/);
  const overloaded = await failure(
    bytesOf([
      start,
      chunkFrame({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
    ]),
  );
  assert.equal(overloaded.anthropicType, "overloaded_error");
  const cut = await failure(bytesOf([start]));
  assert.match(cut.message, /before it was complete/);
  const noBytes = await failure(
    encodeFrame({ ":event-type": "chunk", ":message-type": "event" }, JSON.stringify({ nope: 1 })),
  );
  assert.equal(noBytes.code, "upstream_invalid_response");
});
