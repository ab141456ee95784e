/**
 * `POST /v1/messages` passed through natively to an `anthropic` provider and to Claude on Bedrock (InvokeModel),
 * end to end with the official `@anthropic-ai/sdk` against a gateway on a real socket and the fake vendors. What a
 * client notices: the alias as `model` and the upstream's own `msg_` id, thinking blocks with their signatures
 * and `cache_control` reaching the upstream unchanged (the fakes refuse a changed signature, as Anthropic does),
 * the client's `anthropic-version` and `anthropic-beta` forwarded, exact token counts, a broken stream ending in
 * `event: error` with Anthropic's error type (the SDK raises), fallback before the first event, the token's
 * limits and the alias's content rules applied to the passed-through body, and one usage record per request
 * with the upstream's counts, cache tokens included.
 */
import assert from "node:assert/strict";
import Anthropic from "@anthropic-ai/sdk";
import { hashToken } from "../../lib/auth/authenticate.ts";
import {
  FAKE_ANTHROPIC_COUNT_BASE,
  FAKE_ANTHROPIC_KEY,
  FAKE_CACHE_USAGE,
  FAKE_CLAUDE_ANSWER,
  FAKE_CLAUDE_SIGNATURE,
  FAKE_CLAUDE_THINKING,
  type FakeAnthropic,
  startFakeAnthropic,
} from "../helpers/fake_anthropic.ts";
import { FAKE_AWS, FAKE_REGION, type FakeBedrock, startFakeBedrock } from "../helpers/fake_bedrock.ts";
import {
  FAKE_BEDROCK_CACHE,
  FAKE_BEDROCK_CLAUDE_ANSWER,
  FAKE_BEDROCK_CLAUDE_SIGNATURE,
  FAKE_BEDROCK_CLAUDE_THINKING,
  FAKE_BEDROCK_INVOKE_COUNT_BASE,
} from "../helpers/fake_bedrock_claude.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { usageRows } from "../helpers/usage_rows.ts";
import { startFakes } from "../helpers/fakes.ts";
import { anthropicClient, withTestGateway } from "../helpers/with_gateway.ts";

const BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const CEILING_TOKEN = "gw-ceiling-token-0123456789abcdef";

interface Fakes {
  anthropic: FakeAnthropic;
  bedrock: FakeBedrock;
}

function configFor(f: Fakes): string {
  const target = (provider: string, model: string, extra = "") =>
    `{ provider: ${provider}, model: "${model}"${extra} }`;
  return `
server: { host: 127.0.0.1, port: 0 }
providers:
  claude: { type: anthropic, base_url: "${f.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  aws:
    type: bedrock
    region: ${FAKE_REGION}
    base_url: "${f.bedrock.url}"
    access_key_id: ${FAKE_AWS.accessKeyId}
    secret_access_key: "${FAKE_AWS.secretAccessKey}"
models:
  claude:
    type: chat
    targets: [ ${target("claude", "claude-ok")} ]
    content_rules:
      - { name: ssn, pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b", action: redact }
  claude-tools: { type: chat, targets: [ ${target("claude", "claude-tools")} ] }
  chat-claude: { type: chat, targets: [ ${target("claude", "claude-ok")} ] }
  claude-cut: { type: chat, targets: [ ${target("claude", "claude-midstream-error")} ] }
  claude-fallback:
    type: chat
    targets: [ ${target("claude", "claude-529", ", retries: 0")}, ${target("claude", "claude-ok")} ]
  bedrock-claude: { type: chat, targets: [ ${target("aws", BEDROCK_CLAUDE)} ] }
  bedrock-claude-cut: { type: chat, targets: [ ${target("aws", "anthropic.claude-midstream-v1:0")} ] }
  bedrock-claude-error: { type: chat, targets: [ ${target("aws", "anthropic.claude-error-chunk-v1:0")} ] }
${TEST_TOKENS_YAML}  - { name: ceiling, environment: test, sha256: ${
    hashToken(CEILING_TOKEN)
  }, models: ["*"], max_tokens: 1500 }
`;
}

function withGateway(fn: (gw: TestGateway, fakes: Fakes, client: Anthropic) => Promise<void>) {
  return withTestGateway(() => {
    const fakes = startFakes({ anthropic: startFakeAnthropic, bedrock: startFakeBedrock });
    return { fakes, config: configFor(fakes) };
  }, (gw, fakes) => fn(gw, fakes, anthropicClient(gw)));
}

const SYSTEM: Anthropic.TextBlockParam[] = [
  { type: "text", text: "You are a coding agent.", cache_control: { type: "ephemeral" } },
];
const WEATHER: Anthropic.Tool = {
  name: "get_weather",
  description: "The weather at a place",
  input_schema: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
};

Deno.test("messages native: create through Anthropic, the alias as model, the body upstream as sent", async () => {
  await withGateway(async (_gw, { anthropic }, client) => {
    const message = await client.messages.create({
      model: "claude",
      max_tokens: 256,
      system: SYSTEM,
      messages: [{ role: "user", content: "Hello" }],
      metadata: { user_id: "user-1" },
    });
    assert.equal(message.model, "claude");
    assert.equal(message.id, "msg_fake01", "the upstream's own id");
    assert.deepEqual(message.content, [{ type: "text", text: FAKE_CLAUDE_ANSWER }]);
    assert.equal(message.stop_reason, "end_turn");
    assert.equal(message.usage.cache_read_input_tokens, FAKE_CACHE_USAGE.cache_read_input_tokens);
    const sent = anthropic.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages");
    assert.equal(sent.body.model, "claude-ok", "the target's model");
    assert.deepEqual(sent.body.system, SYSTEM, "cache_control arrives unchanged");
    assert.deepEqual(sent.body.metadata, { user_id: "user-1" });
    assert.match(sent.headers.get("anthropic-version")!, /^\d{4}-\d{2}-\d{2}$/);
    assert.notEqual(
      sent.headers.get("anthropic-version"),
      "2023-06-01",
      "the SDK's own version is forwarded",
    );
    assert.equal(sent.headers.get("x-api-key"), FAKE_ANTHROPIC_KEY, "the provider's key, never the client's");
  });
});

Deno.test("messages native: a tool_use → tool_result round trip reaches Anthropic block for block", async () => {
  await withGateway(async (_gw, { anthropic }, client) => {
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: "Weather in SF?" }];
    const first = await client.messages.create({
      model: "claude-tools",
      max_tokens: 512,
      tools: [WEATHER],
      messages,
    });
    assert.equal(first.stop_reason, "tool_use");
    const use = first.content.find((b) => b.type === "tool_use")!;
    assert.equal(use.type === "tool_use" && use.name, "get_weather");
    assert.deepEqual(use.type === "tool_use" && use.input, {
      location: "San Francisco, CA",
      unit: "fahrenheit",
    });
    messages.push({ role: "assistant", content: first.content }, {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: use.id, content: [{ type: "text", text: "65°F" }] }],
    });
    const second = await client.messages.create({
      model: "claude-tools",
      max_tokens: 512,
      tools: [WEATHER],
      messages,
    });
    assert.equal(second.model, "claude-tools");
    const sent = anthropic.requests.at(-1)!.body;
    assert.deepEqual(
      sent.messages,
      JSON.parse(JSON.stringify(messages)),
      "the conversation as the client sent it",
    );
    assert.deepEqual(sent.tools, [WEATHER]);
  });
});

Deno.test("messages native: stream() → finalMessage() with thinking and its signature, sent back unchanged", async () => {
  await withGateway(async (_gw, { anthropic }, client) => {
    const params = {
      model: "claude",
      max_tokens: 2048,
      thinking: { type: "enabled" as const, budget_tokens: 1024 },
      messages: [{ role: "user" as const, content: "Hi" }],
    };
    const stream = client.messages.stream(params, {
      headers: { "anthropic-beta": "interleaved-thinking-2025-05-14" },
    });
    const signatures: string[] = [];
    stream.on("signature", (s) => signatures.push(s));
    const final = await stream.finalMessage();
    assert.equal(final.model, "claude");
    assert.deepEqual(signatures, [FAKE_CLAUDE_SIGNATURE]);
    assert.deepEqual(final.content[0], {
      type: "thinking",
      thinking: FAKE_CLAUDE_THINKING,
      signature: FAKE_CLAUDE_SIGNATURE,
    });
    assert.equal(final.content[1].type, "redacted_thinking");
    assert.equal(final.content[2].type === "text" && final.content[2].text, FAKE_CLAUDE_ANSWER);
    assert.equal(anthropic.requests.at(-1)!.headers.get("anthropic-beta"), "interleaved-thinking-2025-05-14");

    // The next turn carries the signed thinking back: the fake refuses it unless the signature is intact.
    const next = await client.messages.create({
      ...params,
      messages: [...params.messages, { role: "assistant", content: final.content }, {
        role: "user",
        content: "And again?",
      }],
    });
    assert.equal(next.stop_reason, "end_turn");
    const sent = anthropic.requests.at(-1)!.body.messages as Anthropic.MessageParam[];
    assert.deepEqual((sent[1].content as Anthropic.ContentBlockParam[])[0], final.content[0]);
  });
});

Deno.test("messages native: countTokens is Anthropic's exact count of the body as sent", async () => {
  await withGateway(async (_gw, { anthropic }, client) => {
    const count = await client.messages.countTokens({
      model: "claude",
      system: SYSTEM,
      messages: [{ role: "user", content: "Count me" }],
    });
    assert.equal(count.input_tokens, FAKE_ANTHROPIC_COUNT_BASE + SYSTEM[0].text.length + "Count me".length);
    assert.equal("estimated" in count, false);
    const sent = anthropic.requests.at(-1)!;
    assert.equal(sent.path, "/v1/messages/count_tokens");
    assert.equal(sent.body.model, "claude-ok");
    assert.deepEqual(sent.body.system, SYSTEM);

    // Every field the SDK's countTokens sends reaches Anthropic's count as sent, beta ones included.
    const fields = {
      cache_control: { type: "ephemeral" },
      mcp_servers: [{ type: "url", url: "https://mcp.example.com/sse", name: "ex" }],
      output_config: { format: { type: "json_schema", schema: { type: "object", properties: {} } } },
      context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
      speed: "fast",
      compaction: { type: "summarize" },
    };
    const beta = await client.beta.messages.countTokens(
      {
        model: "claude",
        messages: [{ role: "user", content: "Count me" }],
        ...fields,
      } as unknown as Parameters<
        typeof client.beta.messages.countTokens
      >[0],
    );
    assert.equal(beta.input_tokens, FAKE_ANTHROPIC_COUNT_BASE + "Count me".length);
    const { model: _, messages: __, ...passed } = anthropic.requests.at(-1)!.body;
    assert.deepEqual(passed, fields);
  });
});

Deno.test("messages native: a mid-stream upstream error ends with event: error of its type; the SDK raises", async () => {
  await withGateway(async (gw, _fakes, client) => {
    const stream = client.messages.stream({
      model: "claude-cut",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hi" }],
    });
    const error = await stream.finalMessage().then(() => null, (err) => err);
    assert.ok(error instanceof Anthropic.APIError, String(error));
    assert.equal(error.type, "overloaded_error");

    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": TEST_TOKEN,
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify({
        model: "claude-cut",
        max_tokens: 64,
        stream: true,
        messages: [{ role: "user", content: "Hi" }],
      }),
    });
    const text = await res.text();
    const names = [...text.matchAll(/^event: (\S+)$/gm)].map((m) => m[1]);
    assert.deepEqual(names.slice(-2), ["content_block_delta", "error"]);
    assert.ok(!names.includes("message_stop"), "never a clean end");
    assert.match(text, /"type":"error","error":\{"type":"overloaded_error"/);
  });
});

Deno.test("messages native: an overloaded first target falls back before the first event", async () => {
  await withGateway(async (_gw, { anthropic }, client) => {
    const final = await client.messages.stream({
      model: "claude-fallback",
      max_tokens: 64,
      messages: [{ role: "user", content: "Hi" }],
    }).finalMessage();
    assert.equal(final.model, "claude-fallback");
    assert.equal(final.content[0].type === "text" && final.content[0].text, FAKE_CLAUDE_ANSWER);
    assert.deepEqual(anthropic.requests.map((r) => r.body.model), ["claude-529", "claude-ok"]);
  });
});

Deno.test("messages native: Claude on Bedrock through InvokeModel, whole and streamed with thinking", async () => {
  await withGateway(async (_gw, { bedrock }, client) => {
    const message = await client.messages.create({
      model: "bedrock-claude",
      max_tokens: 256,
      system: SYSTEM,
      messages: [{ role: "user", content: "Hello" }],
    }, { headers: { "anthropic-beta": "context-1m-2025-08-07" } });
    assert.equal(message.model, "bedrock-claude");
    assert.deepEqual(message.content, [{ type: "text", text: FAKE_BEDROCK_CLAUDE_ANSWER }]);
    assert.equal(message.usage.cache_read_input_tokens, FAKE_BEDROCK_CACHE.cache_read_input_tokens);
    const sent = bedrock.requests.at(-1)!;
    assert.equal(sent.action, "invoke");
    assert.equal(sent.modelId, BEDROCK_CLAUDE);
    assert.ok(sent.signatureValid);
    assert.equal(sent.body.anthropic_version, "bedrock-2023-05-31");
    assert.deepEqual(sent.body.anthropic_beta, ["context-1m-2025-08-07"]);
    assert.deepEqual(sent.body.system, SYSTEM);

    const params = {
      model: "bedrock-claude",
      max_tokens: 2048,
      thinking: { type: "enabled" as const, budget_tokens: 1024 },
      messages: [{ role: "user" as const, content: "Hi" }],
    };
    const final = await client.messages.stream(params).finalMessage();
    assert.equal(bedrock.requests.at(-1)!.action, "invoke-with-response-stream");
    assert.deepEqual(final.content[0], {
      type: "thinking",
      thinking: FAKE_BEDROCK_CLAUDE_THINKING,
      signature: FAKE_BEDROCK_CLAUDE_SIGNATURE,
    });
    assert.equal(final.content[1].type === "text" && final.content[1].text, FAKE_BEDROCK_CLAUDE_ANSWER);
    assert.equal(final.usage.output_tokens, 12);
    assert.equal("amazon-bedrock-invocationMetrics" in final, false);
    const next = await client.messages.create({
      ...params,
      messages: [...params.messages, { role: "assistant", content: final.content }, {
        role: "user",
        content: "More",
      }],
    });
    assert.equal(next.stop_reason, "end_turn", "the signature went back to Bedrock unchanged");

    const count = await client.messages.countTokens({
      model: "bedrock-claude",
      messages: [{ role: "user", content: "abc" }],
    });
    assert.equal(count.input_tokens, FAKE_BEDROCK_INVOKE_COUNT_BASE + 3);
  });
});

Deno.test("messages native: Bedrock stream failures end with event: error; the SDK raises with the type", async () => {
  await withGateway(async (_gw, _fakes, client) => {
    const params = { max_tokens: 64, messages: [{ role: "user" as const, content: "Hi" }] };
    const failed = async (model: string) =>
      await client.messages.stream({ ...params, model }).finalMessage().then(() => null, (err) => err);
    const exception = await failed("bedrock-claude-cut");
    assert.ok(exception instanceof Anthropic.APIError);
    assert.equal(exception.type, "api_error");
    const overloaded = await failed("bedrock-claude-error");
    assert.ok(overloaded instanceof Anthropic.APIError);
    assert.equal(overloaded.type, "overloaded_error");
  });
});

Deno.test("messages native: the token's max_tokens ceiling and the alias's redactions reach the upstream body", async () => {
  await withGateway(async (_gw, { anthropic }, _client) => {
    const client = new Anthropic({ apiKey: CEILING_TOKEN, baseURL: _gw.url, maxRetries: 0 });
    await client.messages.create({
      model: "claude",
      max_tokens: 4000,
      thinking: { type: "enabled", budget_tokens: 2000 },
      system: "My SSN is 123-45-6789.",
      messages: [{
        role: "user",
        content: [{ type: "text", text: "SSN 123-45-6789", cache_control: { type: "ephemeral" } }],
      }],
    });
    const sent = anthropic.requests.at(-1)!.body;
    assert.equal(sent.max_tokens, 1500);
    assert.deepEqual(sent.thinking, { type: "enabled", budget_tokens: 1499 });
    assert.equal(sent.system, "My SSN is [REDACTED].");
    assert.deepEqual(sent.messages, [{
      role: "user",
      content: [{ type: "text", text: "SSN [REDACTED]", cache_control: { type: "ephemeral" } }],
    }]);
  });
});

Deno.test("messages native: one usage record per request with the upstream's counts, cache tokens included", async () => {
  await withGateway(async (gw, _fakes, client) => {
    const params = {
      model: "claude",
      max_tokens: 64,
      system: SYSTEM,
      messages: [{ role: "user" as const, content: "Hi" }],
    };
    await client.messages.create(params);
    await client.messages.stream(params).finalMessage();
    await client.messages.stream({ ...params, model: "claude-cut" }).finalMessage().catch(() => {});
    // Waits a little longer to catch extras.
    const rows = await usageRows<Row>(gw, 3, { settleMs: 200 });
    assert.equal(rows.length, 3, "exactly one record per request");
    const cache = FAKE_CACHE_USAGE.cache_creation_input_tokens + FAKE_CACHE_USAGE.cache_read_input_tokens;
    const [whole, streamed] = rows.filter((r) => r.alias === "claude").sort((a, b) => a.stream - b.stream);
    for (const row of [whole, streamed]) {
      assert.equal(row.endpoint, "messages");
      assert.equal(row.provider, "claude");
      assert.equal(row.upstream_model, "claude-ok");
      assert.equal(row.tokens_estimated, 0);
    }
    assert.deepEqual([whole.prompt_tokens, whole.completion_tokens], [20 + cache, 7]);
    assert.deepEqual([streamed.prompt_tokens, streamed.completion_tokens], [25 + cache, 15]);
    const cut = rows.find((r) => r.alias === "claude-cut")!;
    assert.equal(cut.stream, 1);
    assert.ok(cut.error_code !== null, "a broken stream is recorded as failed");
    assert.equal(cut.prompt_tokens, 25 + cache, "its input count is still the upstream's");
  });
});

/** The events of an Anthropic SSE body: each frame's `event:` name and data object. */
function sseEvents(text: string): { event: string; data: Record<string, unknown> }[] {
  return text.split("\n\n").filter((f) => f.trim() !== "").map((frame) => {
    const event = /^event: (.*)$/m.exec(frame)?.[1] ?? "";
    return { event, data: JSON.parse(/^data: (.*)$/m.exec(frame)![1]) };
  });
}

Deno.test("messages native: a Claude-Code-like session (x-api-key, ?beta=true, cached system, tool rounds, stream)", async () => {
  await withGateway(async (gw, { anthropic }) => {
    const system = [
      // Longer-lived entries first (tools, then system, then messages), as Anthropic requires.
      { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral", ttl: "1h" } },
      { type: "text", text: "Project rules: be careful.", cache_control: { type: "ephemeral" } },
    ];
    const messages: Record<string, unknown>[] = [{
      role: "user",
      content: [{ type: "text", text: "Check SF" }],
    }];
    const betas = "claude-code-20250219,interleaved-thinking-2025-05-14";
    const turn = async (model: string) => {
      const body = {
        model,
        max_tokens: 4096,
        stream: true,
        system,
        tools: [{ ...WEATHER, cache_control: { type: "ephemeral", ttl: "1h" } }],
        messages,
        metadata: { user_id: JSON.stringify({ device_id: "d-1", session_id: "s-1" }) },
      };
      const res = await fetch(`${gw.url}/v1/messages?beta=true`, {
        method: "POST",
        headers: {
          "x-api-key": TEST_TOKEN,
          "anthropic-version": "2023-06-01",
          "anthropic-beta": betas,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      const events = sseEvents(await res.text());
      assert.equal(events.at(-1)!.event, "message_stop");
      const sent = anthropic.requests.at(-1)!;
      assert.deepEqual(sent.body, { ...body, model: model === "claude" ? "claude-ok" : "claude-tools" });
      assert.equal(sent.headers.get("anthropic-beta"), betas);
      assert.equal(sent.headers.get("anthropic-version"), "2023-06-01");
      return events;
    };
    for (let round = 0; round < 2; round++) {
      const events = await turn("claude-tools");
      const start = events.find((e) =>
        e.event === "content_block_start" &&
        (e.data.content_block as Record<string, unknown>).type === "tool_use"
      )!;
      const block = start.data.content_block as { id: string; name: string };
      const input = events.filter((e) =>
        e.event === "content_block_delta" && e.data.index === start.data.index
      )
        .map((e) => (e.data.delta as { partial_json: string }).partial_json).join("");
      assert.equal((events[0].data.message as Record<string, unknown>).model, "claude-tools");
      messages.push(
        {
          role: "assistant",
          content: [{ type: "tool_use", id: block.id, name: block.name, input: JSON.parse(input) }],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: block.id, content: `round ${round}: 65°F` }],
        },
      );
    }
    const answer = await turn("claude");
    const text = answer.filter((e) => e.event === "content_block_delta")
      .map((e) => (e.data.delta as { text: string }).text).join("");
    assert.equal(text, FAKE_CLAUDE_ANSWER);
    const usage = (answer[0].data.message as { usage: Record<string, number> }).usage;
    assert.equal(
      usage.cache_read_input_tokens,
      FAKE_CACHE_USAGE.cache_read_input_tokens,
      "the upstream's own counts",
    );
  });
});

interface Row {
  alias: string;
  endpoint: string;
  provider: string;
  upstream_model: string;
  stream: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_estimated: number;
  error_code: string | null;
}
