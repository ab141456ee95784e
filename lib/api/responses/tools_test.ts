import assert from "node:assert/strict";
import { parseResponsesRequest } from "./request.ts";

Deno.test("responses tools: function tools and a function tool choice in the chat form", () => {
  const { chat } = parseResponsesRequest({
    model: "m",
    input: "x",
    tools: [{ type: "function", name: "f", parameters: { type: "object" } }],
    tool_choice: { type: "function", name: "f" },
    parallel_tool_calls: false,
  });
  assert.deepEqual(chat.tools, [{
    type: "function",
    function: { name: "f", parameters: { type: "object" } },
  }]);
  assert.deepEqual(chat.tool_choice, { type: "function", function: { name: "f" } });
  assert.equal(chat.parallel_tool_calls, false);
});
