/** Helpers shared by the OpenAI request → Anthropic request tests. */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { buildAnthropicBody } from "./adapter.ts";
import type { AnthropicProviderConfig } from "../../config/schema.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";

export const CONFIG: AnthropicProviderConfig = {
  type: "anthropic",
  base_url: "https://api.anthropic.com",
  api_key: "sk-ant-test-key-0123456789",
  anthropic_version: "2023-06-01",
  default_max_tokens: 4096,
  headers: {},
  timeouts: {},
  unsupported_params: "error",
};
export const MODEL = "claude-sonnet-4-5";

export function translate(request: JsonObject, config = CONFIG): JsonObject {
  return buildAnthropicBody(config, { model: "alias", ...request } as ChatRequest, MODEL);
}

export function assertGatewayError(fn: () => unknown, status: number, param: string | null, code?: string) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof GatewayError, `expected GatewayError, got ${err}`);
    assert.equal(err.status, status);
    assert.equal(err.param, param);
    if (code !== undefined) assert.equal(err.code, code);
    return true;
  });
}

export const WEATHER_TOOL = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a given location",
    parameters: {
      type: "object",
      properties: { location: { type: "string", description: "The city and state, e.g. San Francisco, CA" } },
      required: ["location"],
    },
  },
};
