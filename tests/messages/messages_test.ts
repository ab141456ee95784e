/**
 * `POST /v1/messages` and `/v1/messages/count_tokens` through translated targets, with the official
 * `@anthropic-ai/sdk` as the client: `builtin`, a fake OpenAI-compatible chat upstream, the fake Gemini and the
 * fake Bedrock (a non-Claude model, so Converse). Plain and tool-using answers (a tool_use → tool_result round
 * trip), `messages.stream()` to `finalMessage()`, raw event transcripts (message_start carries the input
 * tokens, deltas concatenate to the final message), thinking from the upstream's reasoning, stop reasons,
 * a mid-stream cut (an `error` event, the SDK raises), what a translated target cannot honour (400), a
 * Claude-Code-like session, and one usage record per request.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import {
  FAKE_AWS,
  FAKE_BEDROCK_ANSWER,
  FAKE_REGION,
  type FakeBedrock,
  startFakeBedrock,
} from "../helpers/fake_bedrock.ts";
import { FAKE_GEMINI_KEY, type FakeGemini, GEMINI_ANSWER, startFakeGemini } from "../helpers/fake_gemini.ts";
import {
  armGates,
  FAKE_ANSWER,
  FAKE_KEY,
  FAKE_REASONING,
  FAKE_REFUSAL,
  type FakeUpstream,
  startFakeOpenAI,
} from "../helpers/fake_openai.ts";
import {
  startGateway,
  TEST_TOKEN,
  TEST_TOKENS_YAML,
  type TestGateway,
  waitForLog,
} from "../helpers/gateway.ts";
import { startFakes } from "../helpers/fakes.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { type RawUpstream, startRawUpstream } from "../helpers/raw_upstream.ts";
import { anthropicClient, withTestGateway } from "../helpers/with_gateway.ts";

interface Fakes {
  openai: FakeUpstream;
  gemini: FakeGemini;
  bedrock: FakeBedrock;
}

function config(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  gm: { type: gemini, base_url: "${f.gemini.baseURL}", api_key: "${FAKE_GEMINI_KEY}" }
  br:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${f.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  oa-ok: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  oa-strict: { type: chat, strict: true, targets: [ { provider: oa, model: gpt-ok } ] }
  oa-tools: { type: chat, targets: [ { provider: oa, model: gpt-tools } ] }
  oa-reasoning: { type: chat, targets: [ { provider: oa, model: gpt-reasoning } ] }
  oa-refuse: { type: chat, targets: [ { provider: oa, model: gpt-refuse } ] }
  oa-cut: { type: chat, targets: [ { provider: oa, model: gpt-cut } ] }
  oa-gated: { type: chat, targets: [ { provider: oa, model: gpt-gated } ] }
  gm-ok: { type: chat, targets: [ { provider: gm, model: gem-ok } ] }
  gm-tools: { type: chat, targets: [ { provider: gm, model: gem-tools } ] }
  br-ok: { type: chat, targets: [ { provider: br, model: "us.plain-model-v1:0" } ] }
  br-tools: { type: chat, targets: [ { provider: br, model: "us.tools-model-v1:0" } ] }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: TestGateway, client: Anthropic, fakes: Fakes) => Promise<void>) {
  return withTestGateway(() => {
    const fakes = startFakes({ openai: startFakeOpenAI, gemini: startFakeGemini, bedrock: startFakeBedrock });
    return { fakes, config: config(fakes) };
  }, (gw, fakes) => fn(gw, anthropicClient(gw), fakes));
}

/** One vendor behind the gateway: its aliases, what it answers, and the tool call it makes. */
interface Vendor {
  name: string;
  ok: string;
  tools: string;
  answer: string;
  args: Record<string, unknown>;
  /** The body of the vendor's last upstream request, as JSON text. */
  lastBody: (fakes: Fakes) => string;
}

const VENDORS: Vendor[] = [
  {
    name: "openai-compatible",
    ok: "oa-ok",
    tools: "oa-tools",
    answer: FAKE_ANSWER,
    args: { city: "Paris" },
    lastBody: (f) => JSON.stringify(f.openai.requests.at(-1)!.body),
  },
  {
    name: "gemini",
    ok: "gm-ok",
    tools: "gm-tools",
    answer: GEMINI_ANSWER,
    args: { city: "Paris" },
    lastBody: (f) => JSON.stringify(f.gemini.requests.at(-1)!.body),
  },
  {
    name: "bedrock (non-Claude)",
    ok: "br-ok",
    tools: "br-tools",
    answer: FAKE_BEDROCK_ANSWER,
    args: { city: "Paris" },
    lastBody: (f) => JSON.stringify(f.bedrock.requests.at(-1)!.body),
  },
];

const WEATHER: Anthropic.Tool = {
  name: "get_weather",
  description: "Weather for a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** The text of a Message's text blocks. */
function textOf(message: Anthropic.Message): string {
  return message.content.map((b) => b.type === "text" ? b.text : "").join("");
}

function assertMessage(message: Anthropic.Message, alias: string): void {
  assert.match(message.id, /^msg_[0-9A-Za-z]{24}$/);
  assert.equal(message.type, "message");
  assert.equal(message.role, "assistant");
  assert.equal(message.model, alias);
  assert.ok(message.usage.input_tokens > 0, "input tokens");
  assert.ok(message.usage.output_tokens > 0, "output tokens");
}

/** A raw SSE answer as frames, each checked to be `event: <type>` with the same type in its data. */
async function rawStream(gw: TestGateway, body: Record<string, unknown>) {
  const response = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "content-type": "application/json",
      "anthropic-version": "2023-06-01",
    },
    body: JSON.stringify({ max_tokens: 200, stream: true, ...body }),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
  const requestId = response.headers.get("request-id");
  const frames = (await response.text()).trim().split("\n\n").map((frame) => {
    const [event, data, ...rest] = frame.split("\n");
    assert.deepEqual(rest, []);
    const parsed = JSON.parse(data.replace(/^data: /, ""));
    assert.equal(event, `event: ${parsed.type}`);
    return parsed as Record<string, unknown> & { type: string };
  });
  return { requestId, frames };
}

for (const vendor of VENDORS) {
  Deno.test(`messages via ${vendor.name}: create, stream to finalMessage, and the raw transcript`, async () => {
    await withGateway(async (gw, client) => {
      const whole = await client.messages.create({
        model: vendor.ok,
        max_tokens: 200,
        system: "Be brief.",
        messages: [{ role: "user", content: "Hi" }],
      });
      assertMessage(whole, vendor.ok);
      assert.equal(textOf(whole), vendor.answer);
      assert.equal(whole.stop_reason, "end_turn");
      assert.equal(whole.stop_sequence, null);

      const stream = client.messages.stream({
        model: vendor.ok,
        max_tokens: 200,
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      });
      const deltas: string[] = [];
      let startTokens = 0;
      stream.on("text", (t) => deltas.push(t));
      stream.on("streamEvent", (e) => {
        if (e.type === "message_start") startTokens = e.message.usage.input_tokens;
      });
      const final = await stream.finalMessage();
      assertMessage(final, vendor.ok);
      assert.equal(textOf(final), vendor.answer);
      assert.equal(deltas.join(""), vendor.answer);
      assert.ok(startTokens > 0, "message_start carries the input tokens");

      const { requestId, frames } = await rawStream(gw, {
        model: vendor.ok,
        messages: [{ role: "user", content: "Hi" }],
      });
      const types = frames.map((f) => f.type).filter((t) => t !== "ping");
      assert.equal(types[0], "message_start");
      assert.deepEqual(types.slice(-2), ["message_delta", "message_stop"]);
      const start = frames[0].message as Anthropic.Message;
      assert.ok(start.usage.input_tokens > 0);
      const text = frames
        .filter((f) => f.type === "content_block_delta")
        .map((f) => (f.delta as { text?: string }).text ?? "")
        .join("");
      assert.equal(text, vendor.answer);
      const delta = frames.find((f) => f.type === "message_delta")!;
      assert.deepEqual(delta.delta, { stop_reason: "end_turn", stop_sequence: null });
      assert.ok((delta.usage as Anthropic.MessageDeltaUsage).output_tokens > 0);
      const line = await waitForLog(gw, (l) => l.msg === "request" && l.request_id === requestId);
      assert.equal(line.endpoint, "messages");
      assert.equal(line.stream, true);
      assert.equal(line.status, 200);
      assert.ok(Number(line.prompt_tokens) > 0 && Number(line.completion_tokens) > 0);
      assert.equal(gw.logs.filter((l) => l.msg === "request" && l.request_id === requestId).length, 1);
    });
  });

  Deno.test(`messages via ${vendor.name}: a tool_use → tool_result round trip, whole and streamed`, async () => {
    await withGateway(async (gw, client, fakes) => {
      const question: Anthropic.MessageParam = { role: "user", content: "Weather in Paris?" };
      const first = await client.messages.create({
        model: vendor.tools,
        max_tokens: 200,
        tools: [WEATHER],
        tool_choice: { type: "auto" },
        messages: [question],
      });
      assertMessage(first, vendor.tools);
      assert.equal(first.stop_reason, "tool_use");
      const call = first.content.find((b) => b.type === "tool_use");
      assert.ok(call?.type === "tool_use");
      assert.equal(call.name, "get_weather");
      assert.deepEqual(call.input, vendor.args);

      const streamed = await client.messages.stream({
        model: vendor.tools,
        max_tokens: 200,
        tools: [WEATHER],
        messages: [question],
      }).finalMessage();
      const streamedCall = streamed.content.find((b) => b.type === "tool_use");
      assert.ok(streamedCall?.type === "tool_use");
      assert.deepEqual(streamedCall.input, vendor.args);
      assert.equal(streamed.stop_reason, "tool_use");

      const answer = await client.messages.create({
        model: vendor.tools,
        max_tokens: 200,
        tools: [WEATHER],
        messages: [
          question,
          { role: "assistant", content: first.content },
          {
            role: "user",
            content: [{ type: "tool_result", tool_use_id: call.id, content: "Sunny, 21 °C" }],
          },
        ],
      });
      assertMessage(answer, vendor.tools);
      // The tool's result reached the upstream, in its own wire format.
      assert.ok(vendor.lastBody(fakes).includes("Sunny, 21 °C"), vendor.lastBody(fakes));
      void gw;
    });
  });
}

Deno.test("messages via builtin: create, stream, a max_tokens stop and counting with the gateway's tokenizer", async () => {
  await withGateway(async (_gw, client) => {
    const whole = await client.messages.create({
      model: "chat-echo",
      max_tokens: 100,
      messages: [{ role: "user", content: "echo these words back" }],
    });
    assertMessage(whole, "chat-echo");
    assert.equal(textOf(whole), "echo these words back");
    assert.equal(whole.stop_reason, "end_turn");

    const final = await client.messages.stream({
      model: "chat-echo",
      max_tokens: 100,
      messages: [{ role: "user", content: "stream me please" }],
    }).finalMessage();
    assert.equal(textOf(final), "stream me please");

    const cut = await client.messages.create({
      model: "chat-echo",
      max_tokens: 2,
      messages: [{ role: "user", content: "one two three four five" }],
    });
    assert.equal(cut.stop_reason, "max_tokens");

    const small = await client.messages.countTokens({
      model: "chat-echo",
      messages: [{ role: "user", content: "hi" }],
    });
    const large = await client.messages.countTokens({
      model: "chat-echo",
      system: "You are a careful assistant who answers in full sentences.",
      messages: [{ role: "user", content: "hi there, how many tokens is this request?" }],
      tools: [WEATHER],
    });
    assert.ok(small.input_tokens > 0);
    assert.ok(large.input_tokens > small.input_tokens + 20, `${large.input_tokens} vs ${small.input_tokens}`);
  });
});

Deno.test("messages count_tokens: a counting vendor gives its exact count, the gateway estimates otherwise", async () => {
  await withGateway(async (gw, client, fakes) => {
    const params = { messages: [{ role: "user" as const, content: "Count me, please." }] };
    const exact = await client.messages.countTokens({ model: "gm-ok", ...params });
    assert.ok(exact.input_tokens > 0);
    assert.ok(fakes.gemini.requests.some((r) => r.method === "countTokens"));
    const raw = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", ...params }),
    });
    const body = await raw.json();
    assert.equal(body.estimated, true);
    assert.ok(body.input_tokens > 0);
    // max_tokens is not a counting parameter, as at Anthropic.
    const refused = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { "x-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({ model: "chat-echo", max_tokens: 5, ...params }),
    });
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).error.type, "invalid_request_error");

    // What /v1/messages takes, counting takes too: a translated count goes without what the chat form cannot
    // carry, and names it, exact (Gemini counts) or estimated alike: the beta the SDK's beta.messages.countTokens
    // sends (anthropic-beta: token-counting-2024-11-01) first, then the fields.
    for (const model of ["gm-ok", "chat-echo"]) {
      const beta = await client.beta.messages.countTokens(
        {
          model,
          ...params,
          compaction: { type: "summarize" },
          mcp_servers: [{ type: "url", url: "https://mcp.example.com/sse", name: "ex" }],
        } as unknown as Parameters<typeof client.beta.messages.countTokens>[0],
      ).withResponse();
      assert.ok(beta.data.input_tokens > 0);
      assert.equal(
        beta.response.headers.get("x-gateway-dropped"),
        "anthropic-beta:token-counting-2024-11-01,mcp_servers,compaction",
        model,
      );
    }
  });
});

Deno.test("messages: the upstream's reasoning is a thinking block first, whole and streamed", async () => {
  await withGateway(async (_gw, client) => {
    const params = {
      model: "oa-reasoning",
      max_tokens: 4000,
      thinking: { type: "enabled" as const, budget_tokens: 2000 },
      messages: [{ role: "user" as const, content: "Hi" }],
    };
    const whole = await client.messages.create(params);
    assert.deepEqual(whole.content.map((b) => b.type), ["thinking", "text"]);
    const thinking = whole.content[0];
    assert.ok(thinking.type === "thinking");
    assert.equal(thinking.thinking, FAKE_REASONING);
    assert.equal(thinking.signature, "");
    const deltas: string[] = [];
    const stream = client.messages.stream(params);
    stream.on("thinking", (d) => deltas.push(d));
    const final = await stream.finalMessage();
    assert.equal(deltas.join(""), FAKE_REASONING);
    assert.deepEqual(final.content.map((b) => b.type), ["thinking", "text"]);
    assert.equal(textOf(final), FAKE_ANSWER);
  });
});

Deno.test("messages: a refusal stops with refusal, whole and streamed", async () => {
  await withGateway(async (_gw, client) => {
    const params = {
      model: "oa-refuse",
      max_tokens: 100,
      messages: [{ role: "user" as const, content: "x" }],
    };
    const whole = await client.messages.create(params);
    assert.equal(whole.stop_reason, "refusal");
    assert.equal(textOf(whole), FAKE_REFUSAL);
    const final = await client.messages.stream(params).finalMessage();
    assert.equal(final.stop_reason, "refusal");
    assert.equal(textOf(final), FAKE_REFUSAL);
  });
});

Deno.test("messages: a stream cut mid-way ends with an error event, never message_stop, and the SDK raises", async () => {
  await withGateway(async (gw, client) => {
    const { requestId, frames } = await rawStream(gw, {
      model: "oa-cut",
      messages: [{ role: "user", content: "Hi" }],
    });
    const types = frames.map((f) => f.type);
    assert.equal(types[0], "message_start");
    assert.equal(types.at(-1), "error");
    assert.ok(!types.includes("message_stop") && !types.includes("message_delta"));
    assert.equal((frames.at(-1)!.error as { type: string }).type, "api_error");
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.request_id === requestId);
    assert.ok(line.error_code);
    assert.equal(gw.logs.filter((l) => l.msg === "request" && l.request_id === requestId).length, 1);

    await assert.rejects(
      client.messages.stream({
        model: "oa-cut",
        max_tokens: 100,
        messages: [{ role: "user", content: "Hi" }],
      })
        .finalMessage(),
    );
  });
});

Deno.test("messages: what a translated target cannot serve is dropped and named in x-gateway-dropped", async () => {
  await withGateway(async (gw, client, fakes) => {
    const messages = [{ role: "user" as const, content: "Hi" }];
    const before = fakes.openai.requests.length;
    // A server tool runs at Anthropic, and an unknown parameter is not the gateway's to judge: an
    // OpenAI-compatible target answers without them, and the answer says which fields it went without.
    const unknown = { frequency_penalty: 1 } as unknown as Record<string, never>;
    const { data, response } = await client.messages.create({
      model: "oa-ok",
      max_tokens: 50,
      tools: [{ type: "web_search_20250305", name: "web_search" }],
      messages,
      ...unknown,
    }).withResponse();
    assert.equal(data.type, "message");
    assert.equal(response.headers.get("x-gateway-dropped"), "tools.0,frequency_penalty");
    assert.equal(fakes.openai.requests.length, before + 1);
    const sent = fakes.openai.requests.at(-1)!.body as Record<string, unknown>;
    assert.equal(sent.tools, undefined, "the server tool did not reach the chat upstream");
    assert.equal(sent.frequency_penalty, undefined);
    // A strict alias refuses instead, naming the first field its target would go without; nothing is sent.
    const err = await client.messages.create({ model: "oa-strict", max_tokens: 50, messages, ...unknown })
      .then(() => null, (e) => e);
    assert.ok(err instanceof Anthropic.BadRequestError, String(err));
    assert.match(
      (err.error as { error: { message: string } }).error.message,
      /^frequency_penalty: this alias is strict/,
    );
    assert.equal(fakes.openai.requests.length, before + 1);
    // Without anything to drop, a strict alias answers as any other.
    const plain = await client.messages.create({ model: "oa-strict", max_tokens: 50, messages })
      .withResponse();
    assert.equal(plain.response.headers.get("x-gateway-dropped"), null);
    // The usage record says the same as the header; the strict refusal and the plain answer dropped nothing.
    const rows = await pollUsageRows<{ alias: string; status: number; dropped: string | null }>(
      gw,
      (r) => r.length >= 3,
      {
        sql: "SELECT alias, status, dropped FROM usage WHERE alias IN ('oa-ok', 'oa-strict') ORDER BY rowid",
      },
    );
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { alias: "oa-ok", status: 200, dropped: "tools.0,frequency_penalty" },
      { alias: "oa-strict", status: 400, dropped: null },
      { alias: "oa-strict", status: 200, dropped: null },
    ]);
  });
});

Deno.test("messages: a tool_choice forcing a server tool a translated target goes without becomes auto, named", async () => {
  await withGateway(async (_gw, client, fakes) => {
    const search = { type: "web_search_20250305" as const, name: "web_search" as const };
    const cases: {
      tools: Anthropic.ToolUnion[];
      choice: Anthropic.ToolChoice;
      sent: unknown;
      dropped: string;
    }[] = [
      // Nothing left to choose from: no choice is sent (OpenAI refuses a tool_choice without tools).
      {
        tools: [search],
        choice: { type: "tool", name: "web_search" },
        sent: undefined,
        dropped: "tools.0,tool_choice",
      },
      { tools: [search], choice: { type: "any" }, sent: undefined, dropped: "tools.0,tool_choice" },
      {
        tools: [search, WEATHER],
        choice: { type: "tool", name: "web_search" },
        sent: "auto",
        dropped: "tools.0,tool_choice",
      },
      // What the kept tools can honour is sent as asked.
      { tools: [search, WEATHER], choice: { type: "any" }, sent: "required", dropped: "tools.0" },
      {
        tools: [search, WEATHER],
        choice: { type: "tool", name: "get_weather" },
        sent: { type: "function", function: { name: "get_weather" } },
        dropped: "tools.0",
      },
    ];
    for (const { tools, choice, sent, dropped } of cases) {
      const { response } = await client.messages.create({
        model: "oa-ok",
        max_tokens: 50,
        messages: [{ role: "user", content: "Search the web for Deno 2" }],
        tools,
        tool_choice: choice,
      }).withResponse();
      const label = `${JSON.stringify(choice)} over ${tools.length} tools`;
      assert.equal(response.headers.get("x-gateway-dropped"), dropped, label);
      const body = fakes.openai.requests.at(-1)!.body as Record<string, unknown>;
      assert.deepEqual(body.tool_choice, sent, label);
    }
  });
});

Deno.test("messages: what a translated target cannot honour is a clear 400, not dropped", async () => {
  await withGateway(async (_gw, client, fakes) => {
    const messages = [{ role: "user" as const, content: "Hi" }];
    const refusal = async (params: Anthropic.MessageCreateParamsNonStreaming, fragment: RegExp) => {
      const before = fakes.gemini.requests.length + fakes.openai.requests.length;
      const err = await client.messages.create(params).then(() => null, (e) => e);
      assert.ok(err instanceof Anthropic.BadRequestError, String(err));
      assert.equal(err.status, 400);
      const body = err.error as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "invalid_request_error");
      assert.match(body.error.message, fragment);
      assert.equal(fakes.gemini.requests.length + fakes.openai.requests.length, before, "no upstream call");
    };
    // top_k is no longer in the SDK's types (newer Claude models dropped it); older clients still send it.
    const topK = { top_k: 5 } as unknown as Record<string, never>;
    await refusal({ model: "gm-ok", max_tokens: 50, messages, ...topK }, /top_k/);
    await refusal({
      model: "oa-ok",
      max_tokens: 50,
      messages: [{
        role: "user",
        content: [{ type: "document", source: { type: "url", url: "https://example.com/a.pdf" } }],
      }],
    }, /served only by Claude/);
    // A target's own refusal names what the client sent: thinking (its reasoning_effort), an image's turn (Converse
    // fetches no URL; its documents it serves: tests/vendors/bedrock_documents_test.ts).
    const bedrockCalls = fakes.bedrock.requests.length;
    await refusal(
      { model: "br-ok", max_tokens: 4000, thinking: { type: "enabled", budget_tokens: 2000 }, messages },
      /^thinking: The parameter 'thinking' .* not supported by Bedrock/,
    );
    await refusal({
      model: "br-ok",
      max_tokens: 50,
      messages: [{
        role: "user",
        content: [{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }],
      }],
    }, /^messages\.0\.content: .*cannot fetch images/);
    assert.equal(fakes.bedrock.requests.length, bedrockCalls);
    // An OpenAI-compatible target takes top_k (vLLM, Ollama), so it is sent.
    await client.messages.create({ model: "oa-ok", max_tokens: 50, messages, ...topK });
    assert.equal(fakes.openai.requests.at(-1)!.body.top_k, 5);
  });
});

Deno.test("messages: a Claude-Code-like session through a translated target", async () => {
  await withGateway(async (gw, client, fakes) => {
    const system: Anthropic.TextBlockParam[] = [
      { type: "text", text: "You are Claude Code, a coding agent." },
      { type: "text", text: "Project instructions: be terse.", cache_control: { type: "ephemeral" } },
    ];
    const tools: Anthropic.Tool[] = [
      WEATHER,
      { name: "bash", description: "Run a command", input_schema: { type: "object", properties: {} } },
    ];
    const history: Anthropic.MessageParam[] = [
      { role: "user", content: [{ type: "text", text: "Hello.", cache_control: { type: "ephemeral" } }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "A greeting.", signature: "c2lnbmF0dXJl" },
          { type: "text", text: "Hi! What can I do?" },
        ],
      },
      { role: "user", content: "What is the weather in Paris?" },
    ];
    const session = (messages: Anthropic.MessageParam[]) =>
      client.messages.stream(
        { model: "gm-tools", max_tokens: 1000, system, tools, messages, metadata: { user_id: "dev-1" } },
        { headers: { "anthropic-beta": "prompt-caching-2024-07-31" } },
      );
    // The history's thinking does not reach a translated target, and the answer says so.
    const raw = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gm-ok", max_tokens: 100, system, messages: history }),
    });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get("x-gateway-dropped-thinking"), "1");
    // Nor do its prompt-caching breakpoints (Gemini has none to set): named, as the chat API names them.
    const markers = "system.1.cache_control,messages.0.content.0.cache_control";
    assert.equal(raw.headers.get("x-gateway-dropped"), markers);
    await raw.body?.cancel();
    const rows = await pollUsageRows<{ dropped: unknown }>(gw, (r) => r.length > 0, {
      sql: "SELECT dropped FROM usage WHERE request_id = ?",
      params: [raw.headers.get("request-id")],
    });
    assert.deepEqual(rows.map((r) => r.dropped), [markers]);
    // A strict alias refuses to lose them, as it refuses every drop.
    const strict = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "oa-strict", max_tokens: 100, system, messages: history }),
    });
    const refused = await strict.json();
    assert.equal(strict.status, 400, JSON.stringify(refused));
    assert.equal(refused.type, "error");
    assert.match(refused.error.message, /system\.1\.cache_control/);
    const round1 = await session(history).finalMessage();
    assert.equal(round1.stop_reason, "tool_use");
    const call = round1.content.find((b) => b.type === "tool_use");
    assert.ok(call?.type === "tool_use");
    // Gemini got the system prompt and the history, without the thinking.
    const sent = JSON.stringify(fakes.gemini.requests.at(-1)!.body);
    assert.ok(
      sent.includes("be terse") && sent.includes("What can I do?") && !sent.includes("A greeting."),
      sent,
    );

    const texts: string[] = [];
    const round2 = session([
      ...history,
      { role: "assistant", content: round1.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "Sunny" }] },
    ]);
    round2.on("text", (t) => texts.push(t));
    const answer = await round2.finalMessage();
    assert.equal(answer.stop_reason, "end_turn");
    assert.ok(texts.length > 0 && texts.join("") === textOf(answer));
    const answered = (alias: string) => (l: Record<string, unknown>) =>
      l.msg === "request" && l.endpoint === "messages" && l.alias === alias && l.status === 200;
    await waitForLog(gw, (l) => answered("gm-tools")(l) && gw.logs.filter(answered("gm-tools")).length === 2);

    // Several tool rounds in a row: each tool result reaches the upstream as the tool message of its call.
    let messages: Anthropic.MessageParam[] = [{ role: "user", content: "Check the weather three times." }];
    for (let round = 1; round <= 3; round++) {
      const reply = await client.messages.stream({
        model: "oa-tools",
        max_tokens: 500,
        system,
        tools,
        messages,
      })
        .finalMessage();
      assert.equal(reply.stop_reason, "tool_use");
      const use = reply.content.find((b) => b.type === "tool_use")!;
      messages = [
        ...messages,
        { role: "assistant", content: reply.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: `result ${round}` }] },
      ];
    }
    await client.messages.create({ model: "oa-tools", max_tokens: 500, system, tools, messages });
    const chat = fakes.openai.requests.at(-1)!.body.messages as { role: string; content: unknown }[];
    assert.deepEqual(chat.map((m) => m.role), [
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
      "tool",
    ]);
    assert.deepEqual(chat.filter((m) => m.role === "tool").map((m) => m.content), [
      "result 1",
      "result 2",
      "result 3",
    ]);
  });
});

Deno.test("messages: each chunk is forwarded as it arrives, a silent upstream gets pings, a client leaving aborts it", async () => {
  await withGateway(async (gw, _client, fakes) => {
    armGates(fakes.openai, 2);
    const abort = new AbortController();
    const response = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        model: "oa-gated",
        max_tokens: 50,
        stream: true,
        messages: [{ role: "user", content: "Hi" }],
      }),
      signal: abort.signal,
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = "";
    const until = async (pattern: RegExp, ms: number) => {
      const deadline = Date.now() + ms;
      while (!pattern.test(seen)) {
        const left = deadline - Date.now();
        assert.ok(left > 0, `no ${pattern} within ${ms} ms in ${seen}`);
        const next = await Promise.race([
          reader.read(),
          new Promise<null>((r) => setTimeout(() => r(null), left)),
        ]);
        if (next === null) continue;
        assert.ok(!next.done, "stream ended early");
        seen += next.value;
      }
    };
    // message_start goes out before any content: the upstream's role chunk is held for its first content (a
    // failure before it may still fall back), but not past the hold's bound (1 s). The bounds below are what a
    // loaded machine may add; a gateway that held these until content would send them never, as the gates stay
    // closed.
    await until(/event: message_start\n/, 5_000);
    // The upstream stays silent past the ping interval (10 s): the client gets a ping, and nothing else.
    await until(/event: ping\ndata: {"type":"ping"}\n\n/, 20_000);
    assert.ok(!seen.includes("content_block_start"));
    fakes.openai.gates[0].resolve();
    await until(/"text":"c0 "/, 10_000); // the rest stays held: buffering it would send it never
    // The client goes away mid-stream: the upstream request is aborted.
    abort.abort();
    await reader.cancel().catch(() => {});
    await fakes.openai.aborted.promise;
    const line = await waitForLog(gw, (l) => l.msg === "request" && l.alias === "oa-gated");
    assert.equal(line.error_code, "client_closed_request");
  });
});

/** A gateway whose one alias, `oa-raw`, is an OpenAI-compatible upstream answering what the test scripts. */
async function withRawUpstream(
  fn: (gw: TestGateway, client: Anthropic, upstream: RawUpstream) => Promise<void>,
) {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${upstream.url}/v1", api_key: "${FAKE_KEY}" }
models:
  oa-raw: { type: chat, targets: [ { provider: oa, model: gpt-raw } ] }
  chat-unused: { type: chat, targets: [ { provider: oa, model: gpt-raw } ] }
${TEST_TOKENS_YAML}`);
  const client = new Anthropic({ apiKey: TEST_TOKEN, baseURL: gw.url, maxRetries: 0 });
  try {
    await fn(gw, client, upstream);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
}

/** A whole chat completion of one tool call, ending with `finish`, as the raw upstream's next answer. */
function rawToolCompletion(args: string, finish: string, usage: [number, number]) {
  return {
    status: 200,
    headers: { "content-type": "application/json" },
    chunks: [JSON.stringify({
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "gpt-raw",
      choices: [{
        index: 0,
        finish_reason: finish,
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "get_weather", arguments: args },
          }],
        },
      }],
      usage: { prompt_tokens: usage[0], completion_tokens: usage[1], total_tokens: usage[0] + usage[1] },
    })],
  };
}

Deno.test("messages: a whole answer cut by max_tokens inside a tool call is a max_tokens Message, its usage recorded", async () => {
  await withRawUpstream(async (gw, client, upstream) => {
    upstream.next = rawToolCompletion('{"city": "Par', "length", [50, 16]);
    const cut = await client.messages.create({
      model: "oa-raw",
      max_tokens: 16,
      messages: [{ role: "user", content: "weather in Paris?" }],
      tools: [WEATHER],
    });
    assert.equal(cut.stop_reason, "max_tokens");
    assert.deepEqual(cut.content, [{ type: "tool_use", id: "call_1", name: "get_weather", input: {} }]);
    assert.equal(cut.usage.input_tokens, 50);
    assert.equal(cut.usage.output_tokens, 16);

    // Arguments that are no object on a finished answer are the upstream's fault, a 502, yet it answered: its
    // usage is recorded (and charged) all the same.
    upstream.next = rawToolCompletion("[1, 2]", "tool_calls", [40, 7]);
    const bad = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": TEST_TOKEN, "content-type": "application/json" },
      body: JSON.stringify({
        model: "oa-raw",
        max_tokens: 16,
        messages: [{ role: "user", content: "weather in Paris?" }],
        tools: [WEATHER],
      }),
    });
    assert.equal(bad.status, 502);
    assert.equal((await bad.json()).error.type, "api_error");

    type Row = { status: number; prompt_tokens: number; completion_tokens: number };
    const rows = await pollUsageRows<Row>(gw, (r) => r.length >= 2, {
      sql: "SELECT status, prompt_tokens, completion_tokens FROM usage WHERE alias = 'oa-raw' ORDER BY rowid",
    });
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { status: 200, prompt_tokens: 50, completion_tokens: 16 },
      { status: 502, prompt_tokens: 40, completion_tokens: 7 },
    ]);
  });
});

Deno.test("messages: streamed parallel tool calls reach messages.stream() one block at a time, interleaved or not", async () => {
  await withRawUpstream(async (_gw, client, upstream) => {
    const sse = (delta: unknown, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          id: "c",
          object: "chat.completion.chunk",
          created: 1,
          model: "gpt-raw",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const call = (index: number, args: string, id?: string, name?: string) =>
      sse({
        tool_calls: [{ index, ...(id ? { id, type: "function" } : {}), function: { name, arguments: args } }],
      });
    const answers = {
      // OpenAI's way: each call whole before the next.
      sequential: [
        call(0, "", "call_a", "get_weather"),
        call(0, '{"city":"Paris"}'),
        call(1, "", "call_b", "get_time"),
        call(1, '{"tz":"CET"}'),
      ],
      // Some OpenAI-compatible servers interleave the calls' argument deltas.
      interleaved: [
        call(0, '{"city":', "call_a", "get_weather"),
        call(1, '{"tz":', "call_b", "get_time"),
        call(0, '"Paris"}'),
        call(1, '"CET"}'),
      ],
    };
    for (const [name, chunks] of Object.entries(answers)) {
      upstream.next = {
        status: 200,
        headers: { "content-type": "text/event-stream" },
        chunks: [
          sse({ role: "assistant", content: null }),
          ...chunks,
          sse({}, "tool_calls"),
          "data: [DONE]\n\n",
        ],
      };
      const stream = client.messages.stream({
        model: "oa-raw",
        max_tokens: 100,
        messages: [{ role: "user", content: "weather and time in Paris" }],
        tools: [WEATHER, { name: "get_time", input_schema: { type: "object" } }],
      });
      const blocks: unknown[] = [];
      stream.on("contentBlock", (block) => blocks.push(structuredClone(block)));
      const final = await stream.finalMessage();
      const expected = [
        { type: "tool_use", id: "call_a", name: "get_weather", input: { city: "Paris" } },
        { type: "tool_use", id: "call_b", name: "get_time", input: { tz: "CET" } },
      ];
      assert.deepEqual(blocks, expected, name);
      assert.deepEqual(final.content, expected, name);
      assert.equal(final.stop_reason, "tool_use");
    }
  });
});
