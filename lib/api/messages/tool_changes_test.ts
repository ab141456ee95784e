import assert from "node:assert/strict";
import { parse, refused } from "./parse_test_helpers.ts";
import { GatewayError } from "../../errors.ts";

Deno.test("messages request: a system turn's tool changes become the chat request's tools, in order", () => {
  const schema = { type: "object", properties: { q: { type: "string" } } };
  const fn = (name: string) => ({ type: "function", function: { name, parameters: schema } });
  const parsed = parse({
    tools: [{ name: "Read", input_schema: schema }, { name: "mcp__old__x", input_schema: schema }],
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      {
        role: "system",
        content: [
          { type: "text", text: "New MCP tools are available." },
          {
            type: "tool_addition",
            tool: { type: "tool_definition", definition: { name: "mcp__gh__search", input_schema: schema } },
          },
          {
            type: "tool_removal",
            tool: { type: "tool_reference", name: "mcp__old__x" },
            cache_control: { type: "ephemeral" },
          },
        ],
      },
      { role: "user", content: "search github" },
      // Tool changes alone: no system message, and the withdrawn tool offered again.
      {
        role: "system",
        content: [{ type: "tool_addition", tool: { type: "tool_reference", name: "mcp__old__x" } }],
      },
      { role: "system", content: [{ type: "tool_removal", tool: { type: "tool_reference", name: "Read" } }] },
    ],
    tool_choice: { type: "tool", name: "mcp__gh__search" },
  });
  assert.deepEqual(parsed.chat.messages.map((m) => [m.role, m.content]), [
    ["user", "hi"],
    ["assistant", "hello"],
    ["system", "New MCP tools are available."],
    ["user", "search github"],
  ]);
  assert.deepEqual(parsed.messageParams, [
    "messages.0.content",
    "messages.1.content",
    "messages.2.content",
    "messages.3.content",
  ]);
  assert.deepEqual(parsed.chat.tools, [fn("mcp__gh__search"), fn("mcp__old__x")]);
  assert.deepEqual(parsed.chat.tool_choice, { type: "function", function: { name: "mcp__gh__search" } });
  assert.deepEqual([parsed.tolerance.refusal, parsed.tolerance.dropped], [null, [
    "messages.2.content.2.cache_control",
  ]]);
  // Removing every tool leaves none to offer.
  const none = parse({
    tools: [{ name: "Read", input_schema: schema }],
    messages: [{
      role: "system",
      content: [{ type: "tool_removal", tool: { type: "tool_reference", name: "Read" } }],
    }],
  });
  assert.equal(none.chat.tools, undefined);
});

Deno.test("messages request: tool changes only Claude can apply go to Claude targets; bad ones are a 400", () => {
  const turn = (...content: unknown[]) => ({
    messages: [{ role: "user", content: "hi" }, { role: "system", content }],
  });
  for (
    const [body, refusal] of [
      [
        turn({ type: "tool_addition", tool: { type: "mcp_toolset_reference", server_name: "gh" } }),
        /content\.0\.tool\.type/,
      ],
      [
        turn({ type: "tool_addition", tool: { type: "tool_reference", name: "nowhere" } }),
        /content\.0\.tool\.name/,
      ],
      [turn({ type: "image", source: { type: "url", url: "https://x/y.png" } }), /content\.0\.type/],
    ] as const
  ) {
    const { tolerance } = parse(body);
    assert.ok(tolerance.refusal instanceof GatewayError, JSON.stringify(body));
    assert.match(tolerance.refusal.message, refusal);
    assert.match(tolerance.refusal.message, /served only by Claude/);
  }
  // A server tool defined mid-conversation is what Claude serves better, as in `tools`.
  const server = parse(
    turn({
      type: "tool_addition",
      tool: { type: "tool_definition", definition: { type: "web_search_20250305", name: "web_search" } },
    }),
  );
  assert.deepEqual(server.tolerance.native, ["messages.1.content.0.tool.definition"]);
  refused(
    turn({
      type: "tool_removal",
      tool: { type: "tool_definition", definition: { name: "x", input_schema: {} } },
    }),
    /^messages\.1\.content\.0\.tool: Input tag 'tool_definition' found using 'type' does not match any of the expected tags/,
  );
  refused(
    turn({ type: "tool_addition", tool: { type: "tool_definition", definition: { name: "x" } } }),
    /^messages\.1\.content\.0\.tool\.definition\.input_schema: /,
  );
  // The top-level `system` takes text blocks only, as at Anthropic.
  refused(
    { messages: [{ role: "user", content: "hi" }], system: [{ type: "tool_addition" }] },
    /^system\.0\.type/,
  );
});

Deno.test("messages request: a tool result's tool_reference (tool search) is text naming the tool", () => {
  const parsed = parse({
    tools: [{ name: "mcp__gh__search", input_schema: { type: "object" }, defer_loading: true }],
    messages: [
      { role: "user", content: "find github tools" },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "ToolSearch", input: { q: "gh" } }],
      },
      {
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [{ type: "tool_reference", tool_name: "mcp__gh__search" }],
        }],
      },
    ],
  });
  assert.deepEqual(parsed.chat.messages.at(-1), {
    role: "tool",
    tool_call_id: "toolu_1",
    content: "Tool available: mcp__gh__search",
  });
  assert.equal(parsed.tolerance.refusal, null);
  assert.deepEqual(parsed.tolerance.dropped, ["tools.0.defer_loading"]);
});
