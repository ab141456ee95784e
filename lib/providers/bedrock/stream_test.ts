/**
 * ConverseStream events → OpenAI chunks. Event shapes follow ConverseStreamOutput
 * (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html): messageStart,
 * contentBlockStart{start:{toolUse}}, contentBlockDelta{delta:{text}|{toolUse:{input}}}, contentBlockStop,
 * messageStop{stopReason}, metadata{usage,metrics}; Bedrock adds a `p` padding field to each payload.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { eventFrame, exceptionFrame } from "../../../tests/helpers/fake_bedrock.ts";
import { converseChunkTransformer } from "./stream.ts";
import { type EventStreamMessage, eventStreamTransformer } from "./eventstream.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";

const enc = new TextEncoder();
const IDENTITY = { id: "chatcmpl-test", created: 1_700_000_000, model: "m" };

function ev(type: string, payload: unknown): EventStreamMessage {
  return {
    headers: { ":message-type": "event", ":event-type": type, ":content-type": "application/json" },
    payload: enc.encode(JSON.stringify(payload)),
  };
}

function exception(type: string, message: string): EventStreamMessage {
  return {
    headers: { ":message-type": "exception", ":exception-type": type, ":content-type": "application/json" },
    payload: enc.encode(JSON.stringify({ message })),
  };
}

async function run(messages: EventStreamMessage[]): Promise<ChatCompletionChunk[]> {
  return await Array.fromAsync(
    runStages(messages, converseChunkTransformer({ provider: "aws", model: "m", identity: IDENTITY })),
  );
}

const deltas = (chunks: ChatCompletionChunk[]) =>
  chunks.map((c) => c.choices[0]?.delta ?? { usage: c.usage });

const TEXT_STREAM = [
  ev("messageStart", { role: "assistant", p: "abcd" }),
  ev("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hello" }, p: "abcdefg" }),
  ev("contentBlockDelta", { contentBlockIndex: 0, delta: { text: " world" } }),
  ev("contentBlockStop", { contentBlockIndex: 0 }),
  ev("messageStop", { stopReason: "max_tokens" }),
  ev("metadata", {
    usage: { inputTokens: 8, outputTokens: 2, totalTokens: 10 },
    metrics: { latencyMs: 300 },
  }),
];

Deno.test("bedrock stream: text, finish reason, then one usage-only chunk", async () => {
  const chunks = await run(TEXT_STREAM);
  assert.deepEqual(deltas(chunks), [
    { role: "assistant", content: "" },
    { content: "Hello" },
    { content: " world" },
    {},
    { usage: { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 } },
  ]);
  assert.equal(chunks[3].choices[0].finish_reason, "length");
  assert.deepEqual(chunks[4].choices, []);
  assert.ok(chunks.every((c) => c.id === "chatcmpl-test" && c.object === "chat.completion.chunk"));
});

Deno.test("bedrock stream: a metadata event without usable counts gives no usage chunk (not zero tokens)", async () => {
  for (const usage of [undefined, {}, { inputTokens: 8 }, { outputTokens: 2, totalTokens: 10 }]) {
    const chunks = await run([
      ...TEXT_STREAM.slice(0, -1),
      ev("metadata", { usage, metrics: { latencyMs: 1 } }),
    ]);
    assert.equal(chunks.length, 4, JSON.stringify(usage));
    assert.ok(chunks.every((c) => c.usage === undefined), JSON.stringify(usage));
    assert.equal(chunks[3].choices[0].finish_reason, "length");
  }
});

Deno.test("bedrock stream: a metadata usage whose count is not a count gives no usage chunk", async () => {
  for (const bad of [-5000, 2.5, 1e19, 1e308, "100", true]) {
    const usage = { inputTokens: 8, outputTokens: bad, totalTokens: 10 };
    const chunks = await run([...TEXT_STREAM.slice(0, -1), ev("metadata", { usage })]);
    assert.ok(chunks.every((c) => c.usage === undefined), `outputTokens ${bad}`);
  }
});

Deno.test("bedrock stream: tool calls get their own indices, first fragment carries id, type and name", async () => {
  const chunks = await run([
    ev("messageStart", { role: "assistant" }),
    ev("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Checking." } }),
    ev("contentBlockStop", { contentBlockIndex: 0 }),
    ev("contentBlockStart", {
      contentBlockIndex: 1,
      start: { toolUse: { toolUseId: "tooluse_a", name: "top_song" } },
    }),
    ev("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: '{"sign":' } } }),
    ev("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: '"WZPZ"}' } } }),
    ev("contentBlockStop", { contentBlockIndex: 1 }),
    ev("contentBlockStart", {
      contentBlockIndex: 2,
      start: { toolUse: { toolUseId: "tooluse_b", name: "top_song" } },
    }),
    ev("contentBlockDelta", { contentBlockIndex: 2, delta: { toolUse: { input: '{"sign":"WKRP"}' } } }),
    ev("messageStop", { stopReason: "tool_use" }),
    ev("metadata", { usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }),
  ]);
  assert.deepEqual(deltas(chunks).slice(1, -2), [
    { content: "Checking." },
    {
      tool_calls: [{
        index: 0,
        id: "tooluse_a",
        type: "function",
        function: { name: "top_song", arguments: "" },
      }],
    },
    { tool_calls: [{ index: 0, function: { arguments: '{"sign":' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '"WZPZ"}' } }] },
    {
      tool_calls: [{
        index: 1,
        id: "tooluse_b",
        type: "function",
        function: { name: "top_song", arguments: "" },
      }],
    },
    { tool_calls: [{ index: 1, function: { arguments: '{"sign":"WKRP"}' } }] },
  ]);
  assert.equal(chunks.at(-2)!.choices[0].finish_reason, "tool_calls");
});

Deno.test("bedrock stream: exception frames become mapped GatewayErrors", async () => {
  const table: [string, number][] = [
    ["throttlingException", 429],
    ["serviceUnavailableException", 503],
    ["validationException", 400],
    ["internalServerException", 502],
    ["modelStreamErrorException", 502],
  ];
  for (const [type, status] of table) {
    await assert.rejects(
      run([TEXT_STREAM[0], TEXT_STREAM[1], exception(type, "boom")]),
      (err: unknown) => err instanceof GatewayError && err.status === status,
      type,
    );
  }
});

Deno.test("bedrock stream: an error frame's code and message are cut and scrubbed, as every upstream text", async () => {
  const key = "AKIAFAKEBEDROCKKEY0123456789";
  const frame: EventStreamMessage = {
    headers: {
      ":message-type": "error",
      ":error-code": `${"E".repeat(60_000)} key=${key}`,
      ":error-message": `model failed, key=${key}`,
    },
    payload: new Uint8Array(0),
  };
  const transformer = converseChunkTransformer({
    provider: "aws",
    model: "m",
    identity: IDENTITY,
    secrets: [key],
  });
  await assert.rejects(
    Array.fromAsync(runStages([TEXT_STREAM[0], frame], transformer)),
    (err: unknown) => {
      assert.ok(err instanceof GatewayError && err.status === 502);
      // Cut to the 2,000 characters every upstream text is cut to (the header may be 64 KiB), key masked.
      assert.ok(err.message.length < 2_200, `${err.message.length} characters`);
      assert.ok(!err.message.includes(key));
      assert.match(err.message, /model failed, key=\*\*\*/);
      return true;
    },
  );
});

Deno.test("bedrock stream: a stream cut before messageStop errors; reasoning → reasoning_content", async () => {
  await assert.rejects(
    run(TEXT_STREAM.slice(0, 3)),
    (err: unknown) =>
      err instanceof GatewayError && err.status === 502 && /before it was complete/.test(err.message),
  );
  const chunks = await run([
    ev("contentBlockDelta", { contentBlockIndex: 0, delta: { reasoningContent: { text: "hmm" } } }),
    ev("contentBlockDelta", { contentBlockIndex: 1, delta: { text: "Hi" } }),
    ev("messageStop", { stopReason: "end_turn" }),
  ]);
  assert.deepEqual(deltas(chunks), [
    { role: "assistant", content: "" },
    { reasoning_content: "hmm" },
    { content: "Hi" },
    {},
  ]);
});

Deno.test("bedrock stream: a malformed tool use or output errors the stream (a 502), never a clean stop", async () => {
  for (const reason of ["malformed_tool_use", "malformed_model_output"]) {
    await assert.rejects(
      run([
        ev("messageStart", { role: "assistant" }),
        ev("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Let me check." } }),
        ev("messageStop", { stopReason: reason }),
      ]),
      (err: unknown) =>
        err instanceof GatewayError && err.status === 502 &&
        err.code === "upstream_malformed_function_call" &&
        err.message.includes(`(${reason})`),
      reason,
    );
  }
});

Deno.test("bedrock stream: binary frames split across reads, through the decoder", async () => {
  const frames = [
    eventFrame("messageStart", { role: "assistant" }),
    eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "Hi ✓" } }),
    eventFrame("messageStop", { stopReason: "end_turn" }),
    eventFrame("metadata", { usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } }),
  ];
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((at, f) => (all.set(f, at), at + f.length), 0);
  const pieces: Uint8Array[] = [];
  for (let at = 0; at < all.length; at += 5) pieces.push(all.slice(at, at + 5));
  const chunks = await Array.fromAsync(
    runStages(pieces, eventStreamTransformer(), converseChunkTransformer({ provider: "aws", model: "m" })),
  );
  assert.equal(
    chunks.map((c) => (c.choices[0]?.delta as { content?: string } | undefined)?.content ?? "").join(""),
    "Hi ✓",
  );
  assert.equal(chunks.at(-1)!.usage?.total_tokens, 4);

  const failing = runStages(
    [frames[0], exceptionFrame("throttlingException", "Too many tokens")],
    eventStreamTransformer(),
    converseChunkTransformer({ provider: "aws", model: "m" }),
  );
  await assert.rejects(
    Array.fromAsync(failing),
    (err: unknown) => err instanceof GatewayError && err.status === 429,
  );
});

Deno.test("bedrock stream: cancelling the chunk stream cancels the upstream body", async () => {
  let cancelled: unknown = "not cancelled";
  const upstream = new ReadableStream<Uint8Array>({
    pull(controller) {
      controller.enqueue(eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: "x" } }));
    },
    cancel(reason) {
      cancelled = reason;
    },
  });
  const reader = runStages(
    upstream,
    eventStreamTransformer(),
    converseChunkTransformer({ provider: "aws", model: "m" }),
  )
    .getReader();
  await reader.read();
  await reader.cancel("client gone");
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(cancelled, "client gone");
});

Deno.test("bedrock stream: reasoning deltas (Claude thinking) apart from content, frames split at every byte", async () => {
  const frames = [
    eventFrame("messageStart", { role: "assistant" }),
    eventFrame("contentBlockDelta", {
      contentBlockIndex: 0,
      delta: { reasoningContent: { text: "The user wants " } },
    }),
    eventFrame("contentBlockDelta", {
      contentBlockIndex: 0,
      delta: { reasoningContent: { text: "a greeting ✓" } },
    }),
    eventFrame("contentBlockDelta", {
      contentBlockIndex: 0,
      delta: { reasoningContent: { signature: "ErcBCkgIAhABGAIiQMuSecretSignature" } },
    }),
    eventFrame("contentBlockStop", { contentBlockIndex: 0 }),
    eventFrame("contentBlockDelta", {
      contentBlockIndex: 1,
      delta: { reasoningContent: { redactedContent: "AAEC" } },
    }),
    eventFrame("contentBlockDelta", { contentBlockIndex: 2, delta: { text: "Hello!" } }),
    eventFrame("contentBlockStop", { contentBlockIndex: 2 }),
    eventFrame("messageStop", { stopReason: "end_turn" }),
    eventFrame("metadata", { usage: { inputTokens: 9, outputTokens: 40, totalTokens: 49 } }),
  ];
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((at, f) => (all.set(f, at), at + f.length), 0);
  for (let at = 0; at <= all.length; at++) {
    const chunks = await Array.fromAsync(
      runStages(
        [all.slice(0, at), all.slice(at)],
        eventStreamTransformer(),
        converseChunkTransformer({ provider: "aws", model: "m", identity: IDENTITY }),
      ),
    );
    assert.deepEqual(deltas(chunks), [
      { role: "assistant", content: "" },
      { reasoning_content: "The user wants " },
      { reasoning_content: "a greeting ✓" },
      { content: "Hello!" },
      {},
      { usage: { prompt_tokens: 9, completion_tokens: 40, total_tokens: 49 } },
    ], `split at byte ${at}`);
  }
});

Deno.test("bedrock stream: the answer tool's input → content as it arrives, finish stop, frames split at every byte", async () => {
  const frames = [
    eventFrame("messageStart", { role: "assistant" }),
    eventFrame("contentBlockStart", {
      contentBlockIndex: 0,
      start: { toolUse: { toolUseId: "tooluse_j", name: "json_response" } },
    }),
    eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { toolUse: { input: '{"greeting":' } } }),
    eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { toolUse: { input: '"Hi ✓"}' } } }),
    eventFrame("contentBlockStop", { contentBlockIndex: 0 }),
    eventFrame("messageStop", { stopReason: "tool_use" }),
    eventFrame("metadata", { usage: { inputTokens: 9, outputTokens: 8, totalTokens: 17 } }),
  ];
  const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  frames.reduce((at, f) => (all.set(f, at), at + f.length), 0);
  for (let at = 0; at <= all.length; at++) {
    const chunks = await Array.fromAsync(
      runStages(
        [all.slice(0, at), all.slice(at)],
        eventStreamTransformer(),
        converseChunkTransformer({ provider: "aws", model: "m", identity: IDENTITY }),
      ),
    );
    assert.deepEqual(deltas(chunks), [
      { role: "assistant", content: "" },
      { content: '{"greeting":' },
      { content: '"Hi ✓"}' },
      {},
      { usage: { prompt_tokens: 9, completion_tokens: 8, total_tokens: 17 } },
    ], `split at byte ${at}`);
    assert.equal(chunks.at(-2)!.choices[0].finish_reason, "stop");
  }
});

Deno.test("bedrock stream: an answer beside a client tool call finishes tool_calls; an empty answer is {}", async () => {
  const chunks = await run([
    ev("messageStart", { role: "assistant" }),
    ev("contentBlockStart", {
      contentBlockIndex: 0,
      start: { toolUse: { toolUseId: "a", name: "json_response" } },
    }),
    ev("contentBlockStop", { contentBlockIndex: 0 }),
    ev("contentBlockStart", {
      contentBlockIndex: 1,
      start: { toolUse: { toolUseId: "b", name: "top_song" } },
    }),
    ev("contentBlockDelta", { contentBlockIndex: 1, delta: { toolUse: { input: '{"sign":"WZPZ"}' } } }),
    ev("contentBlockStop", { contentBlockIndex: 1 }),
    ev("messageStop", { stopReason: "tool_use" }),
  ]);
  assert.deepEqual(deltas(chunks).slice(1, 4), [
    { content: "{}" },
    { tool_calls: [{ index: 0, id: "b", type: "function", function: { name: "top_song", arguments: "" } }] },
    { tool_calls: [{ index: 0, function: { arguments: '{"sign":"WZPZ"}' } }] },
  ]);
  assert.equal(chunks.at(-1)!.choices[0].finish_reason, "tool_calls");
});

Deno.test("bedrock stream: a tool called with no input streams `{}` as its arguments, as the whole answer gives", async () => {
  const chunks = await run([
    ev("messageStart", { role: "assistant" }),
    ev("contentBlockStart", { contentBlockIndex: 0, start: { toolUse: { toolUseId: "tu_a", name: "now" } } }),
    ev("contentBlockDelta", { contentBlockIndex: 0, delta: { toolUse: { input: "" } } }),
    ev("contentBlockStop", { contentBlockIndex: 0 }),
    ev("contentBlockStart", { contentBlockIndex: 1, start: { toolUse: { toolUseId: "tu_b", name: "now" } } }),
    ev("contentBlockStop", { contentBlockIndex: 1 }),
    ev("messageStop", { stopReason: "tool_use" }),
  ]);
  const args = new Map<number, string>();
  type Call = { index: number; function: { arguments: string } };
  for (const chunk of deltas(chunks) as { tool_calls?: Call[] }[]) {
    for (const call of chunk.tool_calls ?? []) {
      args.set(call.index, (args.get(call.index) ?? "") + call.function.arguments);
    }
  }
  assert.deepEqual([...args.values()], ["{}", "{}"]);
});
