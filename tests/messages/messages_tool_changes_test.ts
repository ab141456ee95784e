/**
 * Claude Code's mid-conversation tool changes (`mid-conversation-tool-changes-2026-07-01`): when MCP tools arrive
 * or leave mid-session it sends a `system` turn of `tool_addition` / `tool_removal` blocks, and tool search
 * answers with `tool_reference` blocks in a tool result. End to end with a gateway on a real socket: an Anthropic
 * target gets the turn as sent; an OpenAI-compatible target gets its outcome as the chat request's tools (and
 * counting takes it too); a tool_reference reaches it as text naming the tool.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, type FakeAnthropic, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_KEY, type FakeUpstream, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { startFakes } from "../helpers/fakes.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

interface Fakes {
  anthropic: FakeAnthropic;
  openai: FakeUpstream;
}

function withGateway(fn: (gw: TestGateway, fakes: Fakes) => Promise<void>) {
  return withFakeGateway(
    () => startFakes({ anthropic: startFakeAnthropic, openai: startFakeOpenAI }),
    (fakes) => `
server: { host: 127.0.0.1, port: 0 }
providers:
  an: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  oa: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-claude: { type: chat, targets: [ { provider: an, model: claude-ok } ] }
  oa-ok: { type: chat, targets: [ { provider: oa, model: gpt-ok } ] }
${TEST_TOKENS_YAML}`,
    fn,
  );
}

const BETAS = "claude-code-20250219,mid-conversation-tool-changes-2026-07-01";

async function post(gw: TestGateway, path: string, body: unknown) {
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: {
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      "anthropic-beta": BETAS,
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

const SCHEMA = { type: "object", properties: { q: { type: "string" } } };

/** A session whose MCP server came late: `mcp__gh__search` arrives, `mcp__old__x` leaves. */
function session(model: string): Record<string, unknown> {
  return {
    model,
    max_tokens: 100,
    tools: [{ name: "Read", input_schema: SCHEMA }, { name: "mcp__old__x", input_schema: SCHEMA }],
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      {
        role: "system",
        content: [
          { type: "text", text: "New MCP tools are available." },
          {
            type: "tool_addition",
            tool: {
              type: "tool_definition",
              definition: { name: "mcp__gh__search", description: "Search GitHub", input_schema: SCHEMA },
            },
          },
          {
            type: "tool_removal",
            tool: { type: "tool_reference", name: "mcp__old__x" },
            cache_control: { type: "ephemeral" },
          },
        ],
      },
      { role: "user", content: "search github" },
    ],
  };
}

Deno.test("messages tool changes: an Anthropic target gets Claude Code's tool-change turn as sent", async () => {
  await withGateway(async (gw, { anthropic }) => {
    const body = session("chat-claude");
    const { status, body: answer } = await post(gw, "/v1/messages", body);
    assert.equal(status, 200, JSON.stringify(answer));
    assert.equal(answer.type, "message");
    const sent = anthropic.requests.at(-1)!;
    assert.deepEqual(sent.body, { ...body, model: "claude-ok" });
    assert.equal(sent.headers.get("anthropic-beta"), BETAS);
  });
});

Deno.test("messages tool changes: a translated target is offered the tools the changes leave", async () => {
  await withGateway(async (gw, { openai }) => {
    const { status, body: answer } = await post(gw, "/v1/messages", session("oa-ok"));
    assert.equal(status, 200, JSON.stringify(answer));
    assert.equal(answer.type, "message");
    const sent = openai.requests.at(-1)!.body;
    const tools = sent.tools as { function: { name: string; description?: string } }[];
    assert.deepEqual(tools.map((t) => t.function.name), ["Read", "mcp__gh__search"]);
    assert.equal(tools[1].function.description, "Search GitHub");
    assert.deepEqual(
      (sent.messages as { role: string; content: unknown }[]).map((m) => [m.role, m.content]),
      [["user", "hi"], ["assistant", "hello"], ["system", "New MCP tools are available."], [
        "user",
        "search github",
      ]],
    );
    // Counting reads the same request (the gateway's tokenizer here).
    const count = await post(gw, "/v1/messages/count_tokens", { ...session("oa-ok"), max_tokens: undefined });
    assert.equal(count.status, 200, JSON.stringify(count.body));
    assert.ok((count.body.input_tokens as number) > 0);
  });
});

Deno.test("messages tool changes: tool search's tool_reference reaches a translated target as text", async () => {
  await withGateway(async (gw, { openai }) => {
    const { status, body: answer } = await post(gw, "/v1/messages", {
      model: "oa-ok",
      max_tokens: 100,
      tools: [
        { name: "ToolSearch", input_schema: SCHEMA },
        { name: "mcp__gh__search", input_schema: SCHEMA, defer_loading: true },
      ],
      messages: [
        { role: "user", content: "find github tools" },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "toolu_1", name: "ToolSearch", input: { q: "github" } }],
        },
        {
          role: "user",
          content: [{
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [{ type: "tool_reference", tool_name: "mcp__gh__search" }],
          }],
        },
      ],
    });
    assert.equal(status, 200, JSON.stringify(answer));
    const sent = openai.requests.at(-1)!.body;
    assert.deepEqual((sent.messages as unknown[]).at(-1), {
      role: "tool",
      tool_call_id: "toolu_1",
      content: "Tool available: mcp__gh__search",
    });
    const tools = sent.tools as { function: { name: string } }[];
    assert.deepEqual(tools.map((t) => t.function.name), ["ToolSearch", "mcp__gh__search"]);
  });
});
