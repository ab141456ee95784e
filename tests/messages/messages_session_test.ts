/**
 * A scripted Claude-Code-like session over `/v1/messages`, run end to end through a translated target (a fake
 * OpenAI-compatible chat upstream) and a native one (the fake Anthropic), with the same script: the requests
 * Claude Code sends (`x-api-key`, `?beta=true`, `anthropic-version` and `anthropic-beta`, its `x-app` and
 * user agent, a system prompt and tools with `cache_control`, `metadata.user_id`), a token count first, then
 * several streamed tool rounds (tool_use → tool_result, the history growing each time, the cache breakpoint
 * moving to the newest turn), then a streamed final answer. Each turn's raw transcript is checked as an
 * Anthropic client reads it, each target checked for what reached it, and every request leaves one access-log
 * line and one usage record.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, FAKE_CLAUDE_ANSWER, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_ANSWER, FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { pollUsageRows } from "../helpers/usage_rows.ts";
import { startFakes } from "../helpers/fakes.ts";
import { eventually } from "../helpers/backstop.ts";

type Json = Record<string, unknown>;
type Fakes = { openai: ReturnType<typeof startFakeOpenAI>; anthropic: ReturnType<typeof startFakeAnthropic> };

const BETAS = "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14";
const VERSION = "2023-06-01";
/** The headers Claude Code sends with `ANTHROPIC_API_KEY` set (its stainless headers left out). */
const HEADERS = {
  "x-api-key": TEST_TOKEN,
  "anthropic-version": VERSION,
  "anthropic-beta": BETAS,
  "anthropic-dangerous-direct-browser-access": "true",
  "x-app": "cli",
  "user-agent": "claude-cli/2.0.0 (external, cli)",
  "content-type": "application/json",
};

const SYSTEM = [
  { type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude." },
  {
    type: "text",
    text: "You are an interactive CLI tool that helps users with software engineering tasks.",
    cache_control: { type: "ephemeral" },
  },
];
const TOOLS = [
  {
    name: "bash",
    description: "Executes a given bash command",
    input_schema: {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { command: { type: "string" } },
      required: ["command"],
      additionalProperties: false,
    },
  },
  {
    name: "get_weather",
    description: "The weather at a place",
    input_schema: {
      type: "object",
      properties: { city: { type: "string" }, location: { type: "string" } },
      additionalProperties: false,
    },
    cache_control: { type: "ephemeral" },
  },
];
const ROUNDS = 3;

/** One target kind the session runs through: its aliases, its answer, and what must have reached it. */
interface Target {
  name: string;
  /** The alias that calls a tool every turn. */
  tools: string;
  /** The alias that answers with text. */
  answer: string;
  text: string;
  /** Checks the upstream saw the session as it should, after the last turn. */
  check(fakes: Fakes, sent: Json[]): void;
}

const TARGETS: Target[] = [
  {
    name: "a translated target (OpenAI-compatible chat)",
    tools: "cc-oa-tools",
    answer: "cc-oa",
    text: FAKE_ANSWER,
    check({ openai }, sent) {
      const calls = openai.requests.filter((r) => r.path === "/v1/chat/completions");
      assert.equal(calls.length, ROUNDS + 1, "one upstream call per turn");
      for (const call of calls) {
        assert.equal(call.headers.get("authorization"), `Bearer ${FAKE_KEY}`, "the provider's key");
        assert.equal(call.headers.get("anthropic-beta"), null, "Anthropic's headers are not sent to OpenAI");
        assert.equal(call.body.stream, true);
      }
      const last = calls.at(-1)!.body;
      assert.equal(last.model, "gpt-ok");
      const messages = last.messages as { role: string; content: unknown; tool_call_id?: string }[];
      assert.deepEqual(
        messages.map((m) => m.role),
        ["system", "user", ...Array.from({ length: ROUNDS }, () => ["assistant", "tool"]).flat()],
      );
      const system = JSON.stringify(messages[0].content);
      for (const block of SYSTEM) assert.ok(system.includes(block.text), system);
      const results = messages.filter((m) => m.role === "tool");
      assert.deepEqual(results.map((m) => m.content), ["round 1: 18°C", "round 2: 18°C", "round 3: 18°C"]);
      // Each tool result answers the call of its own round, by the id the client got.
      const ids = sent.at(-1)!.messages as Json[];
      const uses = ids.filter((m) => m.role === "assistant").map((m) =>
        ((m.content as Json[]).find((b) => b.type === "tool_use")!).id
      );
      assert.deepEqual(results.map((m) => m.tool_call_id), uses);
      const tools = last.tools as { function: { name: string } }[];
      assert.deepEqual(tools.map((t) => t.function.name), ["bash", "get_weather"]);
      assert.equal(last.user, sent[0].metadata && (sent[0].metadata as Json).user_id);
    },
  },
  {
    name: "a native target (Anthropic)",
    tools: "cc-claude-tools",
    answer: "cc-claude",
    text: FAKE_CLAUDE_ANSWER,
    check({ anthropic }, sent) {
      const calls = anthropic.requests.filter((r) => r.path === "/v1/messages");
      assert.equal(calls.length, sent.length, "one upstream call per turn");
      calls.forEach((call, i) => {
        const model = sent[i].model === "cc-claude" ? "claude-ok" : "claude-tools";
        assert.deepEqual(call.body, { ...sent[i], model }, "the body as sent, byte for byte but the model");
        assert.equal(
          call.headers.get("x-api-key"),
          FAKE_ANTHROPIC_KEY,
          "the provider's key, not the client's",
        );
        assert.equal(call.headers.get("anthropic-version"), VERSION);
        assert.equal(call.headers.get("anthropic-beta"), BETAS);
      });
      const count = anthropic.requests.find((r) => r.path === "/v1/messages/count_tokens")!;
      assert.equal(count.headers.get("anthropic-version"), VERSION, "count_tokens forwards the version");
      assert.equal(count.headers.get("anthropic-beta"), BETAS, "count_tokens forwards the betas");
    },
  },
];

function config(f: Fakes): string {
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  local: { type: builtin }
  oa: { type: openai, base_url: "${f.openai.baseURL}", api_key: "${FAKE_KEY}" }
  claude: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  chat-echo: { type: chat, targets: [ { provider: local, model: echo } ] }
  cc-oa-tools: { type: chat, targets: [ { provider: oa, model: gpt-tools } ] }
  cc-oa: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
  cc-claude-tools: { type: chat, targets: [ { provider: claude, model: claude-tools } ] }
  cc-claude: { type: chat, targets: [ { provider: claude, model: claude-ok } ] }
${TEST_TOKENS_YAML}`;
}

/** The frames of an Anthropic event stream, each `event: <type>` with the same type in its data. */
function frames(text: string): Json[] {
  assert.ok(text.endsWith("\n\n"), "the stream ends on a frame boundary");
  return text.slice(0, -2).split("\n\n").map((frame) => {
    const match = /^event: (\w+)\ndata: (.*)$/s.exec(frame);
    assert.ok(match, `not an event frame: ${frame}`);
    const data = JSON.parse(match[2]);
    assert.equal(data.type, match[1]);
    return data;
  });
}

/** What an Anthropic client builds from a turn's events: the content blocks, the stop reason, the text. */
function accumulate(events: Json[]): { content: Json[]; stopReason: unknown; text: string; output: number } {
  const content: Json[] = [];
  const json: string[] = [];
  let text = "";
  let stopReason: unknown;
  let output = 0;
  for (const e of events) {
    const i = e.index as number;
    if (e.type === "content_block_start") content[i] = { ...(e.content_block as Json) };
    if (e.type === "content_block_delta") {
      const d = e.delta as Json;
      if (d.type === "text_delta") {
        content[i].text = `${content[i].text}${d.text}`;
        text += d.text;
      }
      if (d.type === "input_json_delta") json[i] = (json[i] ?? "") + d.partial_json;
      if (d.type === "thinking_delta") content[i].thinking = `${content[i].thinking}${d.thinking}`;
      if (d.type === "signature_delta") content[i].signature = d.signature;
    }
    if (e.type === "content_block_stop" && content[i].type === "tool_use") {
      content[i].input = JSON.parse(json[i] || "{}");
    }
    if (e.type === "message_delta") {
      stopReason = (e.delta as Json).stop_reason;
      output = (e.usage as Json).output_tokens as number;
    }
  }
  return { content, stopReason, text, output };
}

/** `messages` with the one cache breakpoint Claude Code keeps in them on the newest turn's last block. */
function withBreakpoint(messages: Json[]): Json[] {
  return messages.map((m, i) => {
    const blocks = (m.content as Json[]).map(({ cache_control: _, ...block }) => block);
    if (i === messages.length - 1) blocks[blocks.length - 1].cache_control = { type: "ephemeral" };
    return { ...m, content: blocks };
  });
}

async function post(gw: TestGateway, path: string, body: Json): Promise<Response> {
  return await fetch(`${gw.url}${path}?beta=true`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify(body),
  });
}

/** Runs the session's script against `target`; returns the bodies of its Messages requests, as sent. */
async function runSession(gw: TestGateway, target: Target): Promise<Json[]> {
  const sent: Json[] = [];
  let messages: Json[] = [{
    role: "user",
    content: [{ type: "text", text: "What's the weather? Check thrice." }],
  }];
  const metadata = { user_id: "user_abc_account_def_session_0123" };

  const count = await post(gw, "/v1/messages/count_tokens", {
    model: target.tools,
    system: SYSTEM,
    tools: TOOLS,
    messages: withBreakpoint(messages),
  });
  assert.equal(count.status, 200, await count.clone().text());
  assert.ok(count.headers.get("request-id"));
  assert.ok(((await count.json()).input_tokens as number) > 0);

  const turn = async (model: string) => {
    const body = {
      model,
      max_tokens: 32_000,
      temperature: 1,
      stream: true,
      system: SYSTEM,
      tools: TOOLS,
      metadata,
      messages: withBreakpoint(messages),
    };
    sent.push(body);
    const response = await post(gw, "/v1/messages", body);
    assert.equal(response.status, 200, await response.clone().text());
    assert.match(response.headers.get("content-type")!, /^text\/event-stream/);
    assert.ok(response.headers.get("request-id"), "a request-id on every answer");
    const events = frames(await response.text()).filter((e) => e.type !== "ping");
    assert.equal(events[0].type, "message_start");
    const start = events[0].message as Json;
    assert.equal(start.model, model, "the alias, never the upstream's model");
    assert.ok(((start.usage as Json).input_tokens as number) > 0, "message_start carries the input tokens");
    assert.deepEqual(events.slice(-2).map((e) => e.type), ["message_delta", "message_stop"]);
    assert.ok(!events.some((e) => e.type === "error"));
    return accumulate(events);
  };

  for (let round = 1; round <= ROUNDS; round++) {
    const reply = await turn(target.tools);
    assert.equal(reply.stopReason, "tool_use", `round ${round}`);
    const use = reply.content.find((b) => b.type === "tool_use")!;
    assert.equal(use.name, "get_weather");
    assert.match(String(use.id), /^(toolu_|call_)/);
    assert.equal(typeof use.input, "object");
    messages = [
      ...messages,
      { role: "assistant", content: reply.content },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: use.id, content: `round ${round}: 18°C` }],
      },
    ];
  }
  const answer = await turn(target.answer);
  assert.equal(answer.stopReason, "end_turn");
  assert.equal(answer.text, target.text, "the text deltas make the answer");
  assert.ok(answer.output > 0, "message_delta's output tokens");
  return sent;
}

for (const target of TARGETS) {
  Deno.test(`messages session: a Claude-Code-like session through ${target.name}`, async () => {
    const fakes = startFakes({ openai: startFakeOpenAI, anthropic: startFakeAnthropic });
    const gw = await startGateway(config(fakes));
    try {
      const sent = await runSession(gw, target);
      target.check(fakes, sent);
      // One access-log line per request (the count and every turn), each a 200 on the messages endpoint.
      const requests = 1 + ROUNDS + 1;
      const lines = () => gw.logs.filter((l) => l.msg === "request");
      await eventually("an access-log line for every request", () => lines().length >= requests);
      await new Promise((r) => setTimeout(r, 100)); // a look for an extra line (a slow one only goes unseen)
      assert.equal(lines().length, requests);
      for (const line of lines()) {
        assert.equal(line.endpoint, "messages");
        assert.equal(line.status, 200);
        assert.equal(line.token, "test-all");
      }
      await assertUsageRecords(gw, requests);
    } finally {
      await gw.stop();
      await fakes.stop();
    }
  });
}

/** Exactly `count` usage records, all on the messages endpoint. */
async function assertUsageRecords(gw: TestGateway, count: number): Promise<void> {
  const rows = await pollUsageRows<{ endpoint: string }>(gw, (r) => r.length >= count, {
    sql: "SELECT endpoint FROM usage",
    tries: 150,
    settleMs: 150,
  });
  assert.equal(rows.length, count, "one usage record per request");
  assert.ok(rows.every((r) => r.endpoint === "messages"));
}

Deno.test("messages session: count_tokens forwards the client's anthropic-version and anthropic-beta to Anthropic", async () => {
  const fakes = startFakes({ openai: startFakeOpenAI, anthropic: startFakeAnthropic });
  const gw = await startGateway(config(fakes));
  try {
    // A version other than the provider's default, as SDK 1.x sends, so forwarding is what puts it there.
    const version = "2026-01-15";
    const response = await fetch(`${gw.url}/v1/messages/count_tokens`, {
      method: "POST",
      headers: { ...HEADERS, "anthropic-version": version, "anthropic-beta": "token-counting-2024-11-01" },
      body: JSON.stringify({ model: "cc-claude", messages: [{ role: "user", content: "Count me" }] }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.ok(((await response.json()).input_tokens as number) > 0);
    const sent = fakes.anthropic.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages/count_tokens");
    assert.equal(sent.headers.get("anthropic-version"), version);
    assert.equal(sent.headers.get("anthropic-beta"), "token-counting-2024-11-01");
  } finally {
    await gw.stop();
    await fakes.stop();
  }
});
