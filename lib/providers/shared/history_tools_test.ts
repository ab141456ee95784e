/**
 * A custom (freeform) tool's call in an assistant turn of the history, on the vendors with function tools only:
 * refused by name at the call's `type`, as a custom tool in `tools` is, never sent as a call of a tool named
 * "undefined" nor left out of the history.
 */
import assert from "node:assert/strict";
import type { GatewayError } from "../../errors.ts";
import type { ChatRequest, JsonObject } from "../../openai/types.ts";
import { translate } from "../anthropic/request_test_helpers.ts";
import { toGeminiRequest } from "../gemini/request.ts";
import { toConverseRequest } from "../bedrock/request.ts";

const HISTORY = [
  { role: "user", content: "find TODOs" },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "call_0", type: "function", function: { name: "ls", arguments: "{}" } },
      { id: "call_1", type: "custom", custom: { name: "grep", input: "TODO" } },
    ],
  },
  { role: "tool", tool_call_id: "call_0", content: "a.ts" },
  { role: "tool", tool_call_id: "call_1", content: "a.ts:1 TODO" },
];

const request = { model: "m", messages: HISTORY } as JsonObject as ChatRequest;

for (
  const [vendor, send] of [
    ["Anthropic", () => translate(request)],
    ["Gemini", () => toGeminiRequest(request)],
    ["Bedrock", () => toConverseRequest(request)],
  ] as const
) {
  Deno.test(`${vendor}: a custom tool's call in the history is refused at its type`, () => {
    assert.throws(send, (err: GatewayError) => {
      assert.equal(err.status, 400);
      assert.equal(err.param, "messages[1].tool_calls[1].type");
      assert.equal(err.code, "unsupported_parameter");
      assert.equal(err.message, `Tool calls of type 'custom' are not supported by ${vendor} models.`);
      return true;
    });
  });
}
