/** OpenAI `response_format` → the Converse answer tool. */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { toConverseRequest } from "./request.ts";
import type { ChatMessage, JsonObject } from "../../openai/types.ts";
import { req, TOOL_USE_ID, TOP_SONG_TOOL } from "./request_test_helpers.ts";

const GREETING_SCHEMA = {
  type: "object",
  properties: { greeting: { type: "string" } },
  required: ["greeting"],
  additionalProperties: false,
};
const GREETING_FORMAT = { type: "json_schema", json_schema: { name: "greeting", schema: GREETING_SCHEMA } };
const HI = [{ role: "user", content: "Greet me." }];

Deno.test("bedrock request: a json_schema / json_object response_format → the answer tool, forced with any", () => {
  const body = toConverseRequest(req({ messages: HI, response_format: GREETING_FORMAT }));
  const config = body.toolConfig as { tools: { toolSpec: JsonObject }[]; toolChoice: unknown };
  assert.equal(config.tools.length, 1);
  assert.equal(config.tools[0].toolSpec.name, "json_response");
  assert.deepEqual(config.tools[0].toolSpec.inputSchema, { json: GREETING_SCHEMA });
  assert.match(String(config.tools[0].toolSpec.description), /"greeting"/);
  // One tool and `any`: forced, without `tool`, which AWS documents for Claude and Nova only.
  assert.deepEqual(config.toolChoice, { any: {} });
  const object = toConverseRequest(req({ messages: HI, response_format: { type: "json_object" } }));
  assert.deepEqual(
    (object.toolConfig as { tools: { toolSpec: JsonObject }[] }).tools[0].toolSpec.inputSchema,
    { json: { type: "object" } },
  );
  assert.equal(
    "toolConfig" in toConverseRequest(req({ messages: HI, response_format: { type: "text" } })),
    false,
  );
});

Deno.test("bedrock request: the answer tool beside the client's tools follows tool_choice", () => {
  const config = (extra: JsonObject, messages: ChatMessage[] = HI) =>
    toConverseRequest(req({ messages, response_format: GREETING_FORMAT, tools: [TOP_SONG_TOOL], ...extra }))
      .toolConfig as { tools: { toolSpec: JsonObject }[]; toolChoice: unknown };
  const names = (c: { tools: { toolSpec: JsonObject }[] }) => c.tools.map((t) => t.toolSpec.name);
  for (const choice of [{}, { tool_choice: "auto" }]) {
    assert.deepEqual(names(config(choice)), ["top_song", "json_response"]);
    assert.deepEqual(config(choice).toolChoice, { any: {} });
  }
  // none: only the answer, unless the history's tool blocks need the client's tools declared.
  assert.deepEqual(names(config({ tool_choice: "none" })), ["json_response"]);
  const history = [
    ...HI,
    {
      role: "assistant",
      content: null,
      tool_calls: [{
        id: TOOL_USE_ID,
        type: "function",
        function: { name: "top_song", arguments: '{"sign":"WZPZ"}' },
      }],
    },
    { role: "tool", tool_call_id: TOOL_USE_ID, content: "Elemental Hotel" },
  ];
  const none = config({ tool_choice: "none" }, history);
  assert.deepEqual(names(none), ["top_song", "json_response"]);
  assert.deepEqual(none.toolChoice, { tool: { name: "json_response" } });
  // required or a named function: a call this turn, no answer tool.
  assert.deepEqual(names(config({ tool_choice: "required" })), ["top_song"]);
  assert.deepEqual(config({ tool_choice: "required" }).toolChoice, { any: {} });
});

Deno.test("bedrock request: a forced answer tool leaves Claude's thinking off; reserved name and non-object schema are 400s", () => {
  const claude = "anthropic.claude-sonnet-4-20250514-v1:0";
  const body = toConverseRequest(
    req({ messages: HI, response_format: GREETING_FORMAT, reasoning_effort: "low" }),
    claude,
  );
  assert.equal("additionalModelRequestFields" in body, false);
  assert.ok(
    "additionalModelRequestFields" in
      toConverseRequest(req({ messages: HI, reasoning_effort: "low" }), claude),
  );
  const reserved = { type: "function", function: { name: "json_response", parameters: { type: "object" } } };
  for (const extra of [{}, { response_format: GREETING_FORMAT }]) {
    assert.throws(
      () => toConverseRequest(req({ messages: HI, tools: [TOP_SONG_TOOL, reserved], ...extra })),
      (err: unknown) =>
        err instanceof GatewayError && err.status === 400 && err.param === "tools[1].function.name",
    );
  }
  assert.throws(
    () =>
      toConverseRequest(req({
        messages: HI,
        response_format: { type: "json_schema", json_schema: { name: "g", schema: { type: "array" } } },
      })),
    (err: unknown) =>
      err instanceof GatewayError && err.status === 400 && err.param === "response_format.json_schema.schema",
  );
});
