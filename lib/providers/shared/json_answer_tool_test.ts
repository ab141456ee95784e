/**
 * The forced answer tool's rules, apart from either vendor: which formats it serves, how it goes with the
 * client's tool choice, and the tool it builds (the vendor tests check the bodies sent).
 */
import assert from "node:assert/strict";
import {
  answerFormatUnsupported,
  isJsonAnswer,
  JSON_ANSWER_TOOL,
  jsonAnswerChoice,
  jsonAnswerTool,
} from "./json_answer_tool.ts";

Deno.test("json answer tool: text, json_object and json_schema are served; other formats are not", () => {
  for (const type of ["text", "json_object", "json_schema"]) {
    assert.equal(answerFormatUnsupported({ type }), false);
  }
  for (const bad of [{ type: "grammar" }, { type: 1 }, {}, "json_object", []]) {
    assert.equal(answerFormatUnsupported(bad), true, JSON.stringify(bad));
  }
});

Deno.test("json answer tool: the client's tool choice decides whether the answer is forced, offered or left out", () => {
  assert.equal(jsonAnswerChoice(undefined, false), "answer");
  assert.equal(jsonAnswerChoice("required", false), "answer", "no client tools: nothing else to call");
  assert.equal(jsonAnswerChoice("none", true), "answer");
  for (const choice of [undefined, null, "auto"]) assert.equal(jsonAnswerChoice(choice, true), "any");
  assert.equal(jsonAnswerChoice("required", true), "client");
  assert.equal(jsonAnswerChoice({ type: "function", function: { name: "f" } }, true), "client");
});

Deno.test("json answer tool: the tool for each format; json_schema without a schema is any object", () => {
  assert.equal(jsonAnswerTool(undefined, "V"), null);
  assert.equal(jsonAnswerTool({ type: "text" }, "V"), null);
  assert.deepEqual(jsonAnswerTool({ type: "json_object" }, "V")?.schema, { type: "object" });
  assert.deepEqual(jsonAnswerTool({ type: "json_schema", json_schema: { name: "n" } }, "V")?.schema, {
    type: "object",
  });
  const tool = jsonAnswerTool({
    type: "json_schema",
    json_schema: { name: "n", description: "Be kind.", schema: { type: "object", properties: {} } },
  }, "V")!;
  assert.equal(tool.name, JSON_ANSWER_TOOL);
  assert.ok(isJsonAnswer(tool.name) && !isJsonAnswer("get_weather"));
  assert.match(tool.description, /"n".*Be kind\.$/);
});
