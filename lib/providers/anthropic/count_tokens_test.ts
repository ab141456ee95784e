/**
 * Anthropic's token counting request (from the adapter, so it is the chat translation the gateway really
 * sends) and answer. The body follows Anthropic's count_tokens reference: the Messages fields without
 * `max_tokens`, `stream` or sampling.
 */
import assert from "node:assert/strict";
import type { AnthropicProviderConfig } from "../../config/schema.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import { GatewayError } from "../../errors.ts";
import type { ChatRequest } from "../../openai/types.ts";
import type { UpstreamCall } from "../types.ts";
import { anthropicAdapter } from "./adapter.ts";
import { anthropicInputTokens, countTokensBody } from "./count_tokens.ts";

const CONFIG: AnthropicProviderConfig = {
  type: "anthropic",
  base_url: "https://api.anthropic.com/",
  api_key: "sk-ant-test-key-0123456789",
  anthropic_version: "2023-06-01",
  default_max_tokens: 4096,
  headers: { "anthropic-beta": "token-counting-2024-11-01" },
  timeouts: {},
  unsupported_params: "error",
};
const CALL: UpstreamCall = {
  target: { provider: "claude", model: "claude-sonnet-4-5" } as unknown as ResolvedTarget,
  signal: new AbortController().signal,
  requestId: "req_1",
};

function countRequest(chat: ChatRequest) {
  const request = anthropicAdapter(CONFIG).countTokensRequest!({ chat }, CALL);
  assert.ok(request !== null);
  return { ...request, json: JSON.parse(request.body as string) };
}

Deno.test("anthropic count_tokens: the Messages request without max_tokens, stream or sampling", () => {
  const request = countRequest({
    model: "alias",
    messages: [{ role: "system", content: "You are a scientist" }, {
      role: "user",
      content: "Hello, Claude",
    }],
    max_completion_tokens: 50,
    temperature: 0.2,
    top_p: 0.9,
    stop: ["END"],
    user: "u-1",
    stream: true,
  });
  assert.equal(request.url, "https://api.anthropic.com/v1/messages/count_tokens");
  assert.equal(request.headers["anthropic-version"], "2023-06-01");
  assert.equal(request.headers["anthropic-beta"], "token-counting-2024-11-01");
  assert.equal(request.headers.accept, "application/json");
  assert.equal(request.headers["x-api-key"], undefined, "the key is added by the authorize step");
  assert.deepEqual(request.json, {
    model: "claude-sonnet-4-5",
    system: "You are a scientist",
    messages: [{ role: "user", content: "Hello, Claude" }],
  });
});

Deno.test("anthropic count_tokens: tools and tool_choice count; parameters Anthropic cannot take are dropped, not refused", () => {
  const request = countRequest({
    model: "alias",
    messages: [{ role: "user", content: "Weather in Paris?" }],
    tools: [{
      type: "function",
      function: {
        name: "get_weather",
        description: "Weather",
        parameters: { type: "object", properties: {} },
      },
    }],
    tool_choice: "required",
    response_format: { type: "json_object" },
    seed: 7,
  });
  assert.deepEqual(request.json.tools, [
    { name: "get_weather", input_schema: { type: "object", properties: {} }, description: "Weather" },
  ]);
  assert.deepEqual(request.json.tool_choice, { type: "any" });
  assert.equal("seed" in request.json, false);
  assert.equal("response_format" in request.json, false);
});

Deno.test("anthropic count_tokens: a Messages body is counted whole, less the generation's parameters", () => {
  const input = {
    model: "m",
    messages: [],
    system: "s",
    cache_control: { type: "ephemeral" },
    mcp_servers: [{ type: "url", url: "https://mcp.example.com/sse", name: "ex" }],
    output_config: { format: { type: "json_schema", schema: { type: "object" } } },
    context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
    speed: "fast",
    compaction: { type: "summarize" },
  };
  const generation = {
    max_tokens: 10,
    stream: true,
    stop_sequences: ["END"],
    temperature: 0.5,
    top_p: 0.9,
    top_k: 5,
    metadata: { user_id: "u" },
    service_tier: "auto",
  };
  assert.deepEqual(countTokensBody({ ...input, ...generation }), input);
});

Deno.test("anthropic count_tokens: the answer's input_tokens; anything else is a 502", () => {
  assert.equal(anthropicInputTokens({ input_tokens: 14 }, "claude"), 14);
  assert.equal(anthropicInputTokens({ input_tokens: 0 }, "claude"), 0);
  for (
    const bad of [{}, { input_tokens: "14" }, { input_tokens: -1 }, { input_tokens: 1.5 }, {
      input_tokens: 1e300,
    }]
  ) {
    assert.throws(() => anthropicInputTokens(bad, "claude"), (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 502);
      assert.equal(err.code, "upstream_invalid_response");
      return true;
    });
  }
});
