/** OpenAI `response_format` → the Anthropic answer tool. */
import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { assertGatewayError, translate, WEATHER_TOOL } from "./request_test_helpers.ts";

const GREETING_SCHEMA = {
  type: "object",
  properties: { greeting: { type: "string" } },
  required: ["greeting"],
  additionalProperties: false,
};
const GREETING_FORMAT = {
  type: "json_schema",
  json_schema: { name: "greeting", description: "A greeting.", schema: GREETING_SCHEMA, strict: true },
};
const HI = [{ role: "user", content: "Greet me." }];

Deno.test("anthropic request: a json_schema response_format → the answer tool, forced, with the format's schema", () => {
  const body = translate({ messages: HI, response_format: GREETING_FORMAT });
  const tools = body.tools as JsonObject[];
  assert.equal(tools.length, 1);
  assert.equal(tools[0].name, "json_response");
  assert.deepEqual(tools[0].input_schema, GREETING_SCHEMA);
  assert.match(String(tools[0].description), /"greeting".*A greeting\./s);
  assert.deepEqual(body.tool_choice, { type: "tool", name: "json_response" });
  // json_object: any JSON object; a schema without a type is an object schema.
  const object = translate({ messages: HI, response_format: { type: "json_object" } });
  assert.deepEqual((object.tools as JsonObject[])[0].input_schema, { type: "object" });
  assert.deepEqual(object.tool_choice, { type: "tool", name: "json_response" });
  const untyped = translate({
    messages: HI,
    response_format: { type: "json_schema", json_schema: { name: "g", schema: { properties: {} } } },
  });
  assert.deepEqual((untyped.tools as JsonObject[])[0].input_schema, { type: "object", properties: {} });
  // text needs nothing.
  assert.equal("tools" in translate({ messages: HI, response_format: { type: "text" } }), false);
});

Deno.test("anthropic request: the answer tool beside the client's tools follows tool_choice", () => {
  const withTools = (extra: JsonObject) =>
    translate({ messages: HI, response_format: GREETING_FORMAT, tools: [WEATHER_TOOL], ...extra });
  const names = (body: JsonObject) => (body.tools as JsonObject[]).map((t) => t.name);
  // auto: some tool must be called, the client's or the answer.
  for (const choice of [{}, { tool_choice: "auto" }]) {
    const body = withTools(choice);
    assert.deepEqual(names(body), ["get_weather", "json_response"]);
    assert.deepEqual(body.tool_choice, { type: "any" });
  }
  assert.deepEqual(withTools({ parallel_tool_calls: false }).tool_choice, {
    type: "any",
    disable_parallel_tool_use: true,
  });
  // none: the answer, with the client's tools still declared for the history.
  const none = withTools({ tool_choice: "none" });
  assert.deepEqual(names(none), ["get_weather", "json_response"]);
  assert.deepEqual(none.tool_choice, { type: "tool", name: "json_response" });
  // required or a named function: a call this turn, so no answer tool.
  const required = withTools({ tool_choice: "required" });
  assert.deepEqual(names(required), ["get_weather"]);
  assert.deepEqual(required.tool_choice, { type: "any" });
  const named = withTools({ tool_choice: { type: "function", function: { name: "get_weather" } } });
  assert.deepEqual(named.tool_choice, { type: "tool", name: "get_weather" });
});

Deno.test("anthropic request: a forced answer tool leaves thinking off (Anthropic refuses both together)", () => {
  const body = translate({ messages: HI, response_format: GREETING_FORMAT, reasoning_effort: "low" });
  assert.equal("thinking" in body, false);
  assert.equal(body.max_tokens, 4096);
  // Without a format, the same request thinks.
  assert.ok("thinking" in translate({ messages: HI, reasoning_effort: "low" }));
});

Deno.test("anthropic request: the reserved tool name and non-object schemas are 400s naming the field", () => {
  const reserved = { type: "function", function: { name: "json_response", parameters: { type: "object" } } };
  for (const extra of [{}, { response_format: GREETING_FORMAT }]) {
    assertGatewayError(
      () => translate({ messages: HI, tools: [WEATHER_TOOL, reserved], ...extra }),
      400,
      "tools[1].function.name",
    );
  }
  for (const schema of [{ type: "array", items: { type: "string" } }, "not a schema"]) {
    assertGatewayError(
      () =>
        translate({
          messages: HI,
          response_format: { type: "json_schema", json_schema: { name: "g", schema } },
        }),
      400,
      "response_format.json_schema.schema",
    );
  }
});
