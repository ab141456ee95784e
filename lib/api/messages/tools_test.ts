/** A Messages request's `tools` and `tool_choice`, as the request parser reads them (tools.ts). */
import assert from "node:assert/strict";
import { parse, refused } from "./parse_test_helpers.ts";

Deno.test("messages request: an MCP connector's toolset and a choice of its tool are Anthropic's to judge", () => {
  // platform.claude.com/docs/en/agents-and-tools/mcp-connector (mcp-client-2025-11-20): a toolset has no `name`.
  const body = {
    messages: [{ role: "user", content: "hi" }],
    mcp_servers: [{ type: "url", url: "https://mcp.example.com/sse", name: "example-mcp" }],
    tools: [
      { type: "mcp_toolset", mcp_server_name: "example-mcp", default_config: { enabled: true } },
      { name: "f", input_schema: { type: "object" } },
    ],
    // A tool the server lists: only Anthropic knows its name.
    tool_choice: { type: "tool", name: "search_docs" },
  };
  const parsed = parse(body);
  // Claude targets preferred; a translated one goes without the toolset, and the choice of its tool.
  assert.deepEqual(parsed.tolerance.native, ["mcp_servers", "tools.0"]);
  assert.deepEqual(parsed.tolerance.dropped, ["tool_choice"]);
  assert.equal(parsed.tolerance.refusal, null);
  assert.deepEqual(parsed.chat.tools, [{
    type: "function",
    function: { name: "f", parameters: { type: "object" } },
  }]);
  assert.equal(parsed.chat.tool_choice, "auto");
  // Without MCP servers an undeclared name is still the 400 it is at Anthropic.
  refused({ ...body, mcp_servers: undefined }, /^tool_choice\.name: .*'search_docs'/);
});

Deno.test("messages request: a tool without input_schema is refused as Anthropic does, Field required", () => {
  const messages = [{ role: "user", content: "hi" }];
  refused({ messages, tools: [{ name: "f" }] }, /^tools\.0\.input_schema: Field required$/);
  // One of the wrong type still says which type it should be.
  refused(
    { messages, tools: [{ name: "f", input_schema: "object" }] },
    /^tools\.0\.input_schema: Input should be a valid dictionary, got a string\.$/,
  );
  refused({ messages, tools: [{ input_schema: { type: "object" } }] }, /^tools\.0\.name: Field required$/);
});
