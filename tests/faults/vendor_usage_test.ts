/**
 * What an Anthropic, Gemini or Bedrock upstream reports as usage is untrusted like an OpenAI-compatible one's:
 * an answer without usable counts is not a free request, and counts that are not counts (negative, fractional,
 * past any database's integers, strings) are neither recorded nor shown. The gateway counts the tokens itself
 * (marked `tokens_estimated`, priced, charged to budgets), as it does for an OpenAI-compatible upstream that
 * reports none (docs/policies_and_usage.md), in a whole answer and in a stream.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { type RawStep, type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { eventFrame } from "../helpers/fake_bedrock.ts";

/** The usage record fields these tests read. */
interface UsageLine {
  request_id: string;
  status: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_estimated: boolean;
  cost: number | null;
}

const TEXT = "Hello there, auditor. Nice to meet you today.";

/** A whole answer and a stream, per vendor, carrying `usage` as that vendor places it (undefined: none). */
const VENDORS: Record<
  string,
  { json: (usage?: unknown) => RawStep; stream: (usage?: unknown) => RawStep }
> = {
  anthropic: {
    json: (usage) =>
      json({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [{ type: "text", text: TEXT }],
        stop_reason: "end_turn",
        stop_sequence: null,
        ...(usage === undefined ? {} : { usage }),
      }),
    stream: (usage) =>
      sse([
        { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [] } },
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: TEXT } },
        { type: "content_block_stop", index: 0 },
        {
          type: "message_delta",
          delta: { stop_reason: "end_turn" },
          ...(usage === undefined ? {} : { usage }),
        },
        { type: "message_stop" },
      ]),
  },
  gemini: {
    json: (usage) => json(geminiAnswer(usage)),
    stream: (usage) => sse([geminiAnswer(usage)]),
  },
  bedrock: {
    json: (usage) =>
      json({
        output: { message: { role: "assistant", content: [{ text: TEXT }] } },
        stopReason: "end_turn",
        ...(usage === undefined ? {} : { usage }),
      }),
    stream: (usage) => ({
      status: 200,
      headers: { "content-type": "application/vnd.amazon.eventstream" },
      chunks: [
        eventFrame("messageStart", { role: "assistant" }),
        eventFrame("contentBlockDelta", { contentBlockIndex: 0, delta: { text: TEXT } }),
        eventFrame("contentBlockStop", { contentBlockIndex: 0 }),
        eventFrame("messageStop", { stopReason: "end_turn" }),
        eventFrame("metadata", usage === undefined ? { metrics: { latencyMs: 1 } } : { usage }),
      ],
    }),
  },
};

function geminiAnswer(usage: unknown) {
  return {
    candidates: [{ content: { role: "model", parts: [{ text: TEXT }] }, finishReason: "STOP", index: 0 }],
    ...(usage === undefined ? {} : { usageMetadata: usage }),
  };
}

function json(body: unknown): RawStep {
  return { status: 200, headers: { "content-type": "application/json" }, chunks: [JSON.stringify(body)] };
}

function sse(events: unknown[]): RawStep {
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: events.map((e) => `data: ${JSON.stringify(e)}\n\n`),
  };
}

/** One gateway with one alias per vendor (`chat-<vendor>`, input $1 and output $10 a token), over `up`. */
async function vendorGateway(up: RawUpstream, dir: string): Promise<TestGateway> {
  const target = (p: string) => `{ provider: ${p}, model: m-${p}, retries: 0, price: ${PRICE} }`;
  return await startGateway(`
providers:
  openai: { type: openai, base_url: "${up.url}/v1", api_key: "sk-upstream-key-abcdef0123456789" }
  anthropic: { type: anthropic, base_url: "${up.url}", api_key: "sk-ant-key-abcdef0123456789" }
  gemini: { type: gemini, base_url: "${up.url}/v1beta", api_key: "AIzaSy-gem-key-abcdef0123456789" }
  bedrock:
    type: bedrock
    region: us-east-1
    base_url: "${up.url}"
    access_key_id: AKIAQ7EXAMPLEW3RT6YU
    secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY
models:
${
    ["openai", ...Object.keys(VENDORS)].map((v) => `  chat-${v}: { type: chat, targets: [${target(v)}] }`)
      .join("\n")
  }
  chat-anthropic-retried: { type: chat, targets: [${
    target("anthropic").replace("retries: 0", "retries: 1")
  }] }
${TEST_TOKENS_YAML}
usage: { sqlite: none, jsonl: "${dir}/usage.jsonl", spill: "${dir}/spill.jsonl", flush_interval: 20ms }
`);
}

const PRICE = "{ input: 1000000, output: 10000000 }";

/** Sends a chat request (streamed or not) answered by `step`; the client's status and parsed usage, if any. */
async function ask(
  gw: TestGateway,
  up: RawUpstream,
  id: string,
  alias: string,
  step: RawStep,
  stream: boolean,
): Promise<{ status: number; usage: unknown }> {
  up.next = step;
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${TEST_TOKEN}`,
      "content-type": "application/json",
      "x-request-id": id,
    },
    body: JSON.stringify({
      model: alias,
      messages: [{ role: "user", content: "Say hello to the auditor please." }],
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    }),
  });
  const text = await res.text();
  if (!stream) return { status: res.status, usage: JSON.parse(text).usage };
  let usage: unknown;
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const chunk = JSON.parse(line.slice(6));
    if (chunk.usage) usage = chunk.usage;
  }
  return { status: res.status, usage };
}

/** The usage records the gateway wrote, by request id (read after it stopped, so every record is flushed). */
async function recordsIn(dir: string): Promise<Map<string, UsageLine>> {
  const lines = (await Deno.readTextFile(`${dir}/usage.jsonl`)).trim().split("\n");
  return new Map(lines.map((l) => JSON.parse(l) as UsageLine).map((r) => [r.request_id, r]));
}

Deno.test("vendor usage: an answer without usage is counted by the gateway (estimated, priced), not recorded as 0 tokens", async () => {
  const up = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await vendorGateway(up, dir);
  const cases: string[] = [];
  let stopped = false;
  try {
    for (const [vendor, answers] of Object.entries(VENDORS)) {
      for (const stream of [false, true]) {
        const id = `none-${vendor}-${stream ? "stream" : "json"}`;
        const answer = await ask(
          gw,
          up,
          id,
          `chat-${vendor}`,
          (stream ? answers.stream : answers.json)(),
          stream,
        );
        assert.equal(answer.status, 200, id);
        // As from an OpenAI-compatible upstream without usage: none shown, rather than counts of zero.
        assert.equal(answer.usage, undefined, `${id}: ${JSON.stringify(answer.usage)}`);
        cases.push(id);
      }
    }
    await gw.stop();
    stopped = true;
    const records = await recordsIn(dir);
    for (const id of cases) {
      const record = records.get(id);
      assert.ok(record !== undefined, id);
      assert.equal(record.tokens_estimated, true, `${id}: ${JSON.stringify(record)}`);
      assert.ok(record.prompt_tokens > 0 && record.completion_tokens > 0, `${id}: ${JSON.stringify(record)}`);
      assert.ok((record.cost ?? 0) > 0, `${id}: priced`);
    }
  } finally {
    if (!stopped) await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** Usage with one count that is not a count, per vendor, in that vendor's shape. */
const ABSURD: Record<string, (bad: unknown) => unknown> = {
  anthropic: (bad) => ({ input_tokens: 10, output_tokens: bad }),
  gemini: (bad) => ({ promptTokenCount: bad, candidatesTokenCount: 10 }),
  bedrock: (bad) => ({ inputTokens: bad, outputTokens: 10, totalTokens: 10 }),
};

Deno.test("vendor usage: counts that are not counts are neither recorded nor shown; the gateway counts instead", async () => {
  const up = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await vendorGateway(up, dir);
  const cases: string[] = [];
  let stopped = false;
  try {
    for (const bad of [1e20, -5000, 2.5, "30"]) {
      for (const [vendor, answers] of Object.entries(VENDORS)) {
        for (const stream of [false, true]) {
          const id = `absurd-${vendor}-${stream ? "stream" : "json"}-${bad}`;
          const step = (stream ? answers.stream : answers.json)(ABSURD[vendor](bad));
          const answer = await ask(gw, up, id, `chat-${vendor}`, step, stream);
          assert.equal(answer.status, 200, id);
          assert.equal(answer.usage, undefined, `${id}: ${JSON.stringify(answer.usage)}`);
          cases.push(id);
        }
      }
      // An OpenAI-compatible upstream's valid totals with a cached count that is not one: the client is not shown it.
      const usage = {
        prompt_tokens: 100,
        completion_tokens: 10,
        total_tokens: 110,
        prompt_tokens_details: {},
      };
      usage.prompt_tokens_details = { cached_tokens: bad === 2.5 ? 101 : bad };
      const answer = await ask(gw, up, `cached-${bad}`, "chat-openai", json(openaiAnswer(usage)), false);
      assert.deepEqual(answer.usage, { ...usage, prompt_tokens_details: {} }, `cached_tokens ${bad}`);
    }
    await gw.stop();
    stopped = true;
    const records = await recordsIn(dir);
    for (const id of cases) {
      const record = records.get(id);
      assert.ok(record !== undefined, id);
      assert.equal(record.tokens_estimated, true, `${id}: ${JSON.stringify(record)}`);
      for (const count of [record.prompt_tokens, record.completion_tokens]) {
        assert.ok(
          Number.isSafeInteger(count) && count > 0 && count < 1000,
          `${id}: ${JSON.stringify(record)}`,
        );
      }
      assert.ok(record.cost !== null && record.cost > 0 && record.cost < 1e6, `${id}: cost ${record.cost}`);
    }
  } finally {
    if (!stopped) await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

function openaiAnswer(usage: unknown) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content: TEXT }, finish_reason: "stop" }],
    usage,
  };
}

Deno.test("vendor usage: a stream that breaks after Anthropic counted the prompt is recorded with its count", async () => {
  const up = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await vendorGateway(up, dir);
  // message_start reports the prompt (320 tokens, 20 read from the cache), then the stream fails mid-answer.
  const broken = () =>
    sse([
      {
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          content: [],
          usage: { input_tokens: 300, cache_read_input_tokens: 20, output_tokens: 1 },
        },
      },
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: TEXT } },
      { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    ]);
  let stopped = false;
  try {
    await ask(gw, up, "broken-chat", "chat-anthropic", broken(), true);
    up.next = broken();
    const res = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TEST_TOKEN}`,
        "content-type": "application/json",
        "x-request-id": "broken-responses",
      },
      body: JSON.stringify({
        model: "chat-anthropic",
        input: "Say hello to the auditor please.",
        stream: true,
      }),
    });
    assert.match(await res.text(), /response\.failed/);
    await gw.stop();
    stopped = true;
    const records = await recordsIn(dir);
    for (const id of ["broken-chat", "broken-responses"]) {
      const record = records.get(id);
      assert.ok(record !== undefined, id);
      assert.equal(record.prompt_tokens, 320, `${id}: the upstream's count: ${JSON.stringify(record)}`);
      // The answer's end never came: its tokens are the gateway's count of what the client received.
      assert.ok(
        record.completion_tokens > 1 && record.completion_tokens < 30,
        `${id}: ${JSON.stringify(record)}`,
      );
      assert.equal(record.tokens_estimated, true);
    }
  } finally {
    if (!stopped) await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("vendor usage: a stream that fails before it commits after Anthropic counted the prompt is retried; that prompt is in the record", async () => {
  const up = startRawUpstream();
  const dir = await Deno.makeTempDir();
  const gw = await vendorGateway(up, dir);
  const messageStart = {
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      content: [],
      usage: { input_tokens: 300, cache_read_input_tokens: 20, output_tokens: 1 },
    },
  };
  // The first attempt: message_start (the prompt counted: 320 tokens, 20 from the cache), then the connection
  // cut before anything the client would see; the retry answers whole.
  const attempts: RawStep[] = [
    { ...sse([messageStart]), reset: "after-first-chunk" },
    sse([
      messageStart,
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: TEXT } },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 12 } },
      { type: "message_stop" },
    ]),
  ];
  let stopped = false;
  try {
    up.stepFor = () => attempts.shift() ?? attempts[0];
    // (`stepFor` answers each attempt; the step `ask` sets is the fallback once they are used up.)
    const answered = await ask(gw, up, "retried-chat", "chat-anthropic-retried", attempts[1], true);
    assert.equal(answered.status, 200);
    // The client sees the answer's own usage.
    assert.equal((answered.usage as { prompt_tokens: number }).prompt_tokens, 320);
    await gw.stop();
    stopped = true;
    const record = (await recordsIn(dir)).get("retried-chat");
    assert.ok(record !== undefined);
    assert.equal(record.status, 200);
    // Both attempts' prompts: the upstream counted, and billed, the failed one's too.
    assert.equal(record.prompt_tokens, 640, JSON.stringify(record));
    assert.equal(record.completion_tokens, 12);
    assert.equal(record.tokens_estimated, false);
  } finally {
    if (!stopped) await gw.stop();
    await up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
