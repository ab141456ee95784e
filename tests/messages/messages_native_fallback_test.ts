/**
 * The tolerance rule's fallback for the Messages API, as for Responses: a request with a server tool (Claude's
 * `web_search`), which only an Anthropic target runs, goes to the alias's Anthropic target first and, when
 * that fails, to its translated target, which answers without the server tool and names it
 * (`x-gateway-dropped`, the usage record's `dropped`). A `strict` alias refuses the drop: Anthropic only.
 */
import assert from "node:assert/strict";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { startFakes } from "../helpers/fakes.ts";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

type Fakes = ReturnType<typeof start>;

function start() {
  return startFakes({ anthropic: startFakeAnthropic, openai: startFakeOpenAI });
}

function config(fakes: Fakes): string {
  const targets =
    "[ { provider: claude, model: claude-500, retries: 0 }, { provider: chat, model: gpt-ok } ]";
  return `
routing: { backoff_base: 5ms, backoff_max: 10ms }
providers:
  claude: { type: anthropic, base_url: "${fakes.anthropic.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
  chat: { type: openai, base_url: "${fakes.openai.baseURL}", api_key: "${FAKE_KEY}" }
models:
  chat-failing-claude: { type: chat, targets: ${targets} }
  chat-strict: { type: chat, strict: true, targets: ${targets} }
${TEST_TOKENS_YAML}`;
}

function withGateway(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>): Promise<void> {
  return withInProcessGateway(() => {
    const fakes = start();
    return { fakes, config: config(fakes) };
  }, fn);
}

function post(gw: InProcessGateway, model: string): Promise<Response> {
  return gw.fetch("/v1/messages", {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      model,
      max_tokens: 100,
      messages: [{ role: "user", content: "hi" }],
      tools: [
        { name: "read", description: "Reads a file", input_schema: { type: "object", properties: {} } },
        { type: "web_search_20250305", name: "web_search", max_uses: 3 },
      ],
    }),
  });
}

Deno.test("messages: a server tool's request falls back to the alias's translated target when Anthropic fails", async () => {
  await withGateway(async (gw, fakes) => {
    const response = await post(gw, "chat-failing-claude");
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.equal(response.headers.get("x-gateway-provider"), "chat");
    assert.equal(response.headers.get("x-gateway-dropped"), "tools.1");
    assert.equal(fakes.anthropic.requests.length, 1, "Anthropic was asked first");
    const sent = fakes.openai.requests.at(-1)!.body;
    assert.deepEqual((sent.tools as { function: { name: string } }[]).map((t) => t.function.name), ["read"]);
    assert.equal(gw.records.at(-1)!.dropped, "tools.1");
  });
});

Deno.test("messages: a strict alias sends a server tool's request to Anthropic only", async () => {
  await withGateway(async (gw, fakes) => {
    const response = await post(gw, "chat-strict");
    await response.body?.cancel();
    assert.equal(response.status, 502, "Anthropic's failure");
    assert.equal(fakes.openai.requests.length, 0);
  });
});
