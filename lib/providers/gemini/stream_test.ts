/**
 * The Gemini stream stage behind `sseParseTransformer`: a recorded `streamGenerateContent?alt=sse` answer (CRLF
 * line ends, text with multi-byte UTF-8, a functionCall with a thought signature, usage on the last event)
 * must give the same OpenAI chunks however the bytes are split, and upstream failures must error the
 * stream with a `GatewayError`, never crash or hang.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { sseParseTransformer } from "../../sse/parse.ts";
import { geminiChunkTransformer } from "./stream.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { ChatCompletionChunk } from "../../openai/types.ts";
import { reportedPromptOf } from "../../openai/reported_prompt.ts";

const SIGNATURE = "AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV/dwZ5oZlZHeTmiUKv34qq0=";

/** Events shaped like a recorded Gemini SSE answer (each `data:` is a whole GenerateContentResponse). */
const EVENTS = [
  {
    candidates: [{ content: { role: "model", parts: [{ text: "Café 👋 " }] } }],
    usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 },
    modelVersion: "gemini-2.5-flash",
    responseId: "tTCwacuEBMvnitYP06qsgQY",
  },
  {
    candidates: [{ content: { role: "model", parts: [{ text: "let me check…" }] } }],
    modelVersion: "gemini-2.5-flash",
    responseId: "tTCwacuEBMvnitYP06qsgQY",
  },
  {
    candidates: [{
      content: {
        role: "model",
        parts: [
          { functionCall: { name: "get_weather", args: { city: "Zürich" } }, thoughtSignature: SIGNATURE },
          { functionCall: { name: "get_time", args: {} } },
        ],
      },
      finishReason: "STOP",
      index: 0,
    }],
    usageMetadata: {
      promptTokenCount: 12,
      candidatesTokenCount: 20,
      totalTokenCount: 37,
      thoughtsTokenCount: 5,
    },
    modelVersion: "gemini-2.5-flash",
    responseId: "tTCwacuEBMvnitYP06qsgQY",
  },
];

const sse = (events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join("");
const RECORDED = new TextEncoder().encode(sse(EVENTS));

const identity = { id: "chatcmpl-test", created: 1_700_000_000, model: "gemini-2.5-flash" };

function translate(pieces: Uint8Array[]): ReadableStream<ChatCompletionChunk> {
  let n = 0;
  const source = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
  return runStages(
    source,
    sseParseTransformer(),
    geminiChunkTransformer({
      provider: "gem",
      model: "gemini-2.5-flash",
      identity,
      newId: () => `call_${++n}`,
      secrets: ["AIzaSECRET"],
    }),
  );
}

async function collect(stream: ReadableStream<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  ...identity,
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
});

const EXPECTED = [
  chunk({ role: "assistant", content: "" }),
  chunk({ content: "Café 👋 " }),
  chunk({ content: "let me check…" }),
  chunk({
    tool_calls: [{
      index: 0,
      id: "call_1_ts_AY89a18iOcFus5wr5bW5xN6zZ4aUiCyhgmg6HE2YjtYDV_dwZ5oZlZHeTmiUKv34qq0",
      type: "function",
      function: { name: "get_weather", arguments: '{"city":"Zürich"}' },
    }],
  }),
  chunk({
    tool_calls: [{
      index: 1,
      id: "call_2",
      type: "function",
      function: { name: "get_time", arguments: "{}" },
    }],
  }),
  chunk({}, "tool_calls"),
  {
    ...identity,
    object: "chat.completion.chunk",
    choices: [],
    usage: {
      prompt_tokens: 12,
      completion_tokens: 25,
      total_tokens: 37,
      completion_tokens_details: { reasoning_tokens: 5 },
    },
  },
];

Deno.test("gemini stream: recorded answer → role, text, complete tool calls, finish, usage", async () => {
  assert.deepEqual(await collect(translate([RECORDED])), EXPECTED);
});

Deno.test("gemini stream: the same chunks for a split at every byte offset", async () => {
  // The multi-byte characters (é, 👋, ü, …) are split in two at some of these offsets.
  assert.ok(RECORDED.length > 300);
  for (let at = 0; at <= RECORDED.length; at++) {
    const got = await collect(translate([RECORDED.subarray(0, at), RECORDED.subarray(at)]));
    assert.deepEqual(got, EXPECTED, `split at byte ${at}`);
  }
  const bytes = Array.from(RECORDED, (b) => Uint8Array.of(b));
  assert.deepEqual(await collect(translate(bytes)), EXPECTED, "one byte at a time");
});

async function assertStreamFails(events: string, code: string, message?: RegExp) {
  await assert.rejects(collect(translate([new TextEncoder().encode(events)])), (err: unknown) => {
    assert.ok(err instanceof GatewayError, String(err));
    assert.equal(err.status, 502);
    assert.equal(err.code, code);
    if (message) assert.match(err.message, message);
    return true;
  });
}

Deno.test("gemini stream: an error event mid-stream → GatewayError (key scrubbed)", async () => {
  const events = sse([
    EVENTS[0],
    { error: { code: 500, message: "Internal error AIzaSECRET", status: "INTERNAL" } },
  ]);
  await assertStreamFails(events, "internal", /^Internal error \*\*\*$/);
});

Deno.test("gemini stream: a stream without any finishReason is truncated → GatewayError", async () => {
  await assertStreamFails(sse(EVENTS.slice(0, 2)), "upstream_error", /before it was complete/);
  await assertStreamFails("", "upstream_error", /before it was complete/);
});

Deno.test("gemini stream: a non-JSON event and a malformed function call → GatewayError", async () => {
  await assertStreamFails("data: {not json\r\n\r\n", "upstream_invalid_response");
  await assertStreamFails(
    sse([{ candidates: [{ finishReason: "MALFORMED_FUNCTION_CALL", index: 0 }] }]),
    "upstream_malformed_function_call",
  );
});

Deno.test("gemini stream: a blocked prompt → role chunk, content_filter finish, usage", async () => {
  const got = await collect(translate([
    new TextEncoder().encode(sse([{
      promptFeedback: { blockReason: "PROHIBITED_CONTENT" },
      usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 },
    }])),
  ]));
  assert.deepEqual(got.map((c) => c.choices[0]?.finish_reason ?? null), [null, "content_filter", null]);
  assert.deepEqual(got.at(-1)?.usage, { prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 });
});

Deno.test("gemini stream: MAX_TOKENS → length; plain text answer → stop", async () => {
  const text = (finishReason: string) =>
    sse([{ candidates: [{ content: { role: "model", parts: [{ text: "Hi" }] }, finishReason }] }]);
  for (
    const [reason, expected] of [["MAX_TOKENS", "length"], ["STOP", "stop"], ["SAFETY", "content_filter"]]
  ) {
    const got = await collect(translate([new TextEncoder().encode(text(reason))]));
    assert.equal(got.at(-1)?.choices[0].finish_reason, expected);
    // No usageMetadata: no usage chunk (the gateway counts the tokens), never a usage of zero tokens.
    assert.ok(got.every((c) => c.usage === undefined));
  }
});

Deno.test("gemini stream: thought parts → reasoning_content deltas, never content, at every byte offset", async () => {
  const events = [
    {
      candidates: [{
        content: { role: "model", parts: [{ text: "**Weighing** the café ☕ ", thought: true }] },
      }],
    },
    {
      candidates: [{
        content: { role: "model", parts: [{ text: "options.", thought: true }, { text: "Espresso." }] },
        finishReason: "STOP",
        index: 0,
      }],
      usageMetadata: {
        promptTokenCount: 8,
        candidatesTokenCount: 3,
        thoughtsTokenCount: 40,
        totalTokenCount: 51,
      },
    },
  ];
  const bytes = new TextEncoder().encode(sse(events));
  for (let at = 0; at <= bytes.length; at++) {
    const chunks = await collect(translate([bytes.subarray(0, at), bytes.subarray(at)]));
    assert.deepEqual(chunks.slice(0, 5), [
      chunk({ role: "assistant", content: "" }),
      chunk({ reasoning_content: "**Weighing** the café ☕ " }),
      chunk({ reasoning_content: "options." }),
      chunk({ content: "Espresso." }),
      chunk({}, "stop"),
    ], `split at byte ${at}`);
    assert.deepEqual(chunks[5].usage, {
      prompt_tokens: 8,
      completion_tokens: 43,
      total_tokens: 51,
      completion_tokens_details: { reasoning_tokens: 40 },
    });
  }
});

Deno.test("gemini stream: the prompt Gemini counts on the way rides on the chunks, before the usage at the end", async () => {
  const text = (t: string, meta: unknown, finishReason?: string) => ({
    candidates: [{
      content: { role: "model", parts: [{ text: t }] },
      ...(finishReason ? { finishReason } : {}),
    }],
    usageMetadata: meta,
  });
  const first = { promptTokenCount: 1010, cachedContentTokenCount: 1000, candidatesTokenCount: 1 };
  const got = await collect(translate([
    new TextEncoder().encode(sse([
      text("One", first),
      // The same prompt again (Gemini repeats it in every event): nothing new to carry.
      text("Two", { ...first, candidatesTokenCount: 2 }),
      // An event without a chunk of its own: its prompt rides on the next chunk emitted.
      { usageMetadata: { promptTokenCount: 1020, cachedContentTokenCount: 1000 } },
      // Counts that are not counts carry nothing: the prompt carried before stands.
      text("Three", { promptTokenCount: -1 }),
      text(
        "Four",
        { promptTokenCount: 1020, cachedContentTokenCount: 1000, candidatesTokenCount: 4 },
        "STOP",
      ),
    ])),
  ]));
  assert.deepEqual(
    got.map((c) => (c.choices[0]?.delta as { content?: string } | undefined)?.content ?? null),
    [
      "",
      "One",
      "Two",
      "Three",
      "Four",
      null,
      null,
    ],
  );
  assert.deepEqual(got.map(reportedPromptOf), [
    // The first chunk, before any text: a stream cut after it is recorded with Gemini's count.
    { prompt: 1010, cachedRead: 1000 },
    undefined,
    undefined,
    { prompt: 1020, cachedRead: 1000 },
    undefined,
    undefined,
    undefined,
  ]);
  assert.deepEqual(JSON.parse(JSON.stringify(got[0])), EXPECTED[0], "no client sees it");
});
