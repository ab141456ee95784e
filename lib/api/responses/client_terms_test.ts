import assert from "node:assert/strict";
import { clientMessage, clientParam } from "./client_terms.ts";
import { parseResponsesRequest } from "./request.ts";

Deno.test("client terms: chat params map back to the Responses fields the client sent", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: "x",
    tools: [
      { type: "web_search" },
      { type: "function", name: "a", parameters: { type: "object" } },
      { type: "function", name: "b" },
    ],
  });
  const mapped = (param: string) => clientParam(parsed, param);
  assert.equal(mapped("response_format"), "text.format");
  assert.equal(mapped("response_format.type"), "text.format.type");
  assert.equal(mapped("response_format.json_schema.schema"), "text.format.schema");
  assert.equal(mapped("max_completion_tokens"), "max_output_tokens");
  assert.equal(mapped("max_tokens"), "max_output_tokens");
  assert.equal(mapped("reasoning_effort"), "reasoning.effort");
  // The chat form holds function tools only: its second is the client's third, with flat fields.
  assert.equal(mapped("tools[0].function.parameters"), "tools[1].parameters");
  assert.equal(mapped("tools[1].function.name"), "tools[2].name");
  assert.equal(mapped("tools[1]"), "tools[2]");
  assert.equal(mapped("tools[2].function.name"), "tools[2].function.name", "no such tool: unchanged");
  assert.equal(mapped("tool_choice.function.name"), "tool_choice.name");
  assert.equal(mapped("messages"), "input");
  assert.equal(mapped("messages[0].content[0].image_url.url"), "input");
  assert.equal(mapped("parallel_tool_calls"), "parallel_tool_calls");
  assert.equal(mapped("temperature"), "temperature");
});

Deno.test("client terms: a message's other fields name its item; a user part's image URL is the part's", () => {
  const parsed = parseResponsesRequest({
    model: "m",
    input: [
      { type: "function_call", call_id: "c", name: "f", arguments: "{}" },
      { type: "function_call_output", call_id: "c", output: "x" },
      { role: "user", content: [{ type: "input_image", image_url: "https://x/y.png" }] },
    ],
  });
  const mapped = (param: string) => clientParam(parsed, param);
  assert.equal(mapped("messages[0].tool_calls[0].function.arguments"), "input[0]");
  assert.equal(mapped("messages[1].tool_call_id"), "input[1]");
  assert.equal(mapped("messages[2].content[0].image_url.url"), "input[2].content[0].image_url");
});

Deno.test("client terms: the message names the client's field where it named the chat one", () => {
  assert.equal(
    clientMessage(
      "The parameter 'response_format' with this value is not supported by Anthropic models.",
      "response_format",
      "text.format",
    ),
    "The parameter 'text.format' with this value is not supported by Anthropic models.",
  );
  assert.equal(
    clientMessage(
      "Bad 'response_format.json_schema.schema'.",
      "response_format.json_schema.schema",
      "text.format.schema",
    ),
    "Bad 'text.format.schema'.",
  );
  assert.equal(
    clientMessage("Too many max_tokens_x.", "max_tokens", "max_output_tokens"),
    "Too many max_tokens_x.",
  );
});
