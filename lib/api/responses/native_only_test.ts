import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { parseResponsesRequest } from "./request.ts";

Deno.test("responses native-only: built-in tools, their items and tool choices are kept for native targets", () => {
  const plain = parseResponsesRequest({ model: "m", input: "x", tools: [{ type: "function", name: "f" }] });
  assert.equal(plain.nativeOnly, null, "function tools need no native target");
  const cases: [JsonObject, string, RegExp][] = [
    [{ tools: [{ type: "function", name: "f" }, { type: "web_search" }] }, "tools[1].type", /'web_search'/],
    [{ tools: [{ type: "mcp", server_label: "s" }, { type: "file_search" }] }, "tools[0].type", /'mcp'/],
    [{ tool_choice: { type: "web_search_preview" } }, "tool_choice", /'web_search_preview'/],
    [
      {
        input: [{ role: "user", content: "x" }, { type: "web_search_call", id: "ws_1", status: "completed" }],
      },
      "input[1].type",
      /'web_search_call'/,
    ],
  ];
  for (const [fields, param, name] of cases) {
    const parsed = parseResponsesRequest({ model: "m", input: "x", ...fields });
    const error = parsed.nativeOnly;
    assert.ok(error, JSON.stringify(fields));
    assert.deepEqual([error.status, error.param, error.code], [400, param, "unsupported_value"]);
    assert.match(error.message, name);
    assert.match(error.message, /native_responses/);
  }
  const web = parseResponsesRequest({ model: "m", input: "x", tools: [{ type: "web_search" }] });
  assert.deepEqual(web.params.tools, [{ type: "web_search" }], "echoed as given");
  assert.equal(web.chat.tools, undefined, "the chat form has no built-in tools");
  // Only built-in items (an MCP approval answering a previous response) are a native target's to judge.
  const approval = parseResponsesRequest({
    model: "m",
    input: [{ type: "mcp_approval_response", approval_request_id: "mcpr_1", approve: true }],
  });
  assert.equal(approval.nativeOnly?.param, "input[0].type");
});
