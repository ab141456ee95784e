/**
 * Client fields of `POST /v1/messages` that Anthropic documents and the gateway once mishandled, end to end
 * over real sockets, against one fake upstream speaking both Anthropic's Messages API (a Claude target, which
 * gets the body as sent) and OpenAI's chat completions (a translated target): an MCP connector's toolset (no
 * `name`) and a `tool_choice` naming one of its server's tools reach Anthropic, and a translated target goes
 * without them, named in `x-gateway-dropped`; an interleaved thinking budget above `max_tokens` reaches
 * Anthropic as sent; a document's `context` reaches a translated target's model; `output_config`'s fields the
 * translation does not know reach Anthropic, and are named as dropped on a translated target (refused by a
 * `strict` alias).
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";
import { withTestGateway } from "../helpers/with_gateway.ts";

type Json = Record<string, unknown>;

const MESSAGE = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "claude-up",
  content: [{ type: "text", text: "hi" }],
  stop_reason: "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 5, output_tokens: 1 },
};
const COMPLETION = {
  id: "c",
  object: "chat.completion",
  created: 1,
  model: "up",
  choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
};

/** What the upstream received, by path. */
interface Seen {
  path: string;
  body: Json;
}

function withGateway(fn: (gw: TestGateway, seen: Seen[]) => Promise<void>): Promise<void> {
  return withTestGateway(() => {
    const seen: Seen[] = [];
    const upstream = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
      const path = new URL(req.url).pathname;
      seen.push({ path, body: await req.json() });
      return Response.json(path === "/v1/messages" ? MESSAGE : COMPLETION);
    });
    const url = `http://127.0.0.1:${upstream.addr.port}`;
    return {
      fakes: seen,
      config: `
server: { host: 127.0.0.1, port: 0 }
providers:
  oa: { type: openai, base_url: "${url}/v1", api_key: "k" }
  claude: { type: anthropic, base_url: "${url}", api_key: "k" }
models:
  chat-translated: { type: chat, targets: [ { provider: oa, model: up } ] }
  chat-strict: { type: chat, strict: true, targets: [ { provider: oa, model: up } ] }
  claude: { type: chat, targets: [ { provider: claude, model: claude-up } ] }
${TEST_TOKENS_YAML}`,
      stop: () => upstream.shutdown(),
    };
  }, fn);
}

async function post(gw: TestGateway, body: Json, headers: Record<string, string> = {}) {
  const res = await fetch(`${gw.url}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-api-key": TEST_TOKEN,
      "anthropic-version": "2023-06-01",
      ...headers,
    },
    body: JSON.stringify({ max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...body }),
  });
  return { status: res.status, dropped: res.headers.get("x-gateway-dropped"), text: await res.text() };
}

Deno.test("messages: an MCP connector's toolset and a choice of its tool reach Anthropic; a translated target goes without", async () => {
  await withGateway(async (gw, seen) => {
    const mcp = {
      mcp_servers: [{ type: "url", url: "https://mcp.example.com/sse", name: "example-mcp" }],
      tools: [{ type: "mcp_toolset", mcp_server_name: "example-mcp" }],
      tool_choice: { type: "tool", name: "search_docs" },
    };
    const beta = { "anthropic-beta": "mcp-client-2025-11-20" };
    const native = await post(gw, { model: "claude", ...mcp }, beta);
    assert.equal(native.status, 200, native.text);
    assert.equal(seen.length, 1);
    const { model: _, ...sent } = seen[0].body;
    assert.deepEqual(sent, { max_tokens: 100, messages: [{ role: "user", content: "hi" }], ...mcp });

    const translated = await post(gw, { model: "chat-translated", ...mcp }, beta);
    assert.equal(translated.status, 200, translated.text);
    assert.equal(translated.dropped, "anthropic-beta:mcp-client-2025-11-20,mcp_servers,tools.0,tool_choice");
    const chat = seen[1].body;
    assert.equal(seen[1].path, "/v1/chat/completions");
    assert.equal(chat.tools, undefined);
    assert.equal(chat.tool_choice, undefined);
  });
});

Deno.test("messages: with interleaved thinking a budget above max_tokens reaches Anthropic as sent", async () => {
  await withGateway(async (gw, seen) => {
    // Interleaved thinking's budget is the turn's, across its thinking blocks: it may exceed max_tokens.
    const body = { max_tokens: 16000, thinking: { type: "enabled", budget_tokens: 31999 } };
    const beta = { "anthropic-beta": "interleaved-thinking-2025-05-14" };
    const native = await post(gw, { model: "claude", ...body }, beta);
    assert.equal(native.status, 200, native.text);
    assert.deepEqual(seen[0].body.thinking, body.thinking);
    assert.equal(seen[0].body.max_tokens, 16000);
    // On a translated target the budget picks an effort, as any other.
    const translated = await post(gw, { model: "chat-translated", ...body }, beta);
    assert.equal(translated.status, 200, translated.text);
    assert.equal(seen[1].body.reasoning_effort, "high");
  });
});

Deno.test("messages: a document's context reaches a translated target's model", async () => {
  await withGateway(async (gw, seen) => {
    const document = {
      type: "document",
      source: { type: "text", media_type: "text/plain", data: "The grass is green." },
      title: "Facts",
      context: "Answer only in French.",
    };
    const content = [document, { type: "text", text: "What colour is the grass?" }];
    const answer = await post(gw, { model: "chat-translated", messages: [{ role: "user", content }] });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.dropped, null);
    const [message] = seen[0].body.messages as { content: Json[] }[];
    assert.deepEqual(message.content[0], {
      type: "text",
      text: "Context of the document that follows (Facts): Answer only in French.",
    });
    assert.equal(message.content[1].type, "file");
  });
});

Deno.test("messages: output_config's unknown fields reach Anthropic and are named as dropped on a translated target", async () => {
  await withGateway(async (gw, seen) => {
    const output_config = { effort: "medium", task_budget: { type: "tokens", total: 400000 } };
    const native = await post(gw, { model: "claude", output_config });
    assert.equal(native.status, 200, native.text);
    assert.deepEqual(seen[0].body.output_config, output_config);
    assert.equal(native.dropped, null);

    const translated = await post(gw, { model: "chat-translated", output_config });
    assert.equal(translated.status, 200, translated.text);
    assert.equal(translated.dropped, "output_config.task_budget");
    assert.equal(seen[1].body.reasoning_effort, "medium");
    // A strict alias refuses every drop, naming the field; no upstream is called.
    const strict = await post(gw, { model: "chat-strict", output_config });
    assert.equal(strict.status, 400);
    assert.match(JSON.parse(strict.text).error.message, /^output_config\.task_budget: /);
    assert.equal(seen.length, 2);
  });
});
