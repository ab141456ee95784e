/**
 * A history with tool calls and results but no `tools` (what opencode sends to have a session summarized):
 * Anthropic refuses tool blocks in a request without tools, so the history's tools are declared, with any input,
 * and `tool_choice: none` keeps the model from calling them.
 */
import assert from "node:assert/strict";
import { HISTORY_PLACEHOLDER_TOOL, HISTORY_TOOL_DESCRIPTION } from "../shared/history_tools.ts";
import { translate, WEATHER_TOOL } from "./request_test_helpers.ts";

/** opencode's compaction request: the session's tool use, then the ask for a summary, and no tools. */
const COMPACTION = [
  { role: "user", content: "list files" },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: "toolu_1", type: "function", function: { name: "bash", arguments: '{"cmd":"ls"}' } },
      { id: "toolu_2", type: "function", function: { name: "read", arguments: '{"path":"a.txt"}' } },
    ],
  },
  { role: "tool", tool_call_id: "toolu_1", content: "a.txt b.txt" },
  { role: "tool", tool_call_id: "toolu_2", content: "hello" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "toolu_3", type: "function", function: { name: "bash", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: "toolu_3", content: "" },
  { role: "user", content: "Summarize the conversation so far." },
];

const declared = (name: string) => ({
  name,
  description: HISTORY_TOOL_DESCRIPTION,
  input_schema: { type: "object" },
});

Deno.test("anthropic request: tool history without tools declares the history's tools, each once, and tool_choice none", () => {
  for (
    const extra of [{}, { tools: [] }, { tool_choice: "none" }, {
      tool_choice: "auto",
      parallel_tool_calls: false,
    }]
  ) {
    const body = translate({ messages: COMPACTION, ...extra });
    assert.deepEqual(body.tools, [declared("bash"), declared("read")], JSON.stringify(extra));
    assert.deepEqual(body.tool_choice, { type: "none" }, JSON.stringify(extra));
    // The history itself is sent as it was.
    const turns = body.messages as { content: { type: string }[] }[];
    assert.deepEqual(turns[1].content.map((b) => b.type), ["tool_use", "tool_use"]);
  }
});

Deno.test("anthropic request: only tool results (their calls cut) declare a placeholder tool", () => {
  const body = translate({
    messages: [
      { role: "tool", tool_call_id: "toolu_1", content: "a.txt" },
      { role: "user", content: "Summarize." },
    ],
  });
  assert.deepEqual(body.tools, [declared(HISTORY_PLACEHOLDER_TOOL)]);
  assert.deepEqual(body.tool_choice, { type: "none" });
});

Deno.test("anthropic request: a history tool with a name of 64 characters (the longest a tool takes) is declared by it", () => {
  const name = "t".repeat(64);
  const body = translate({
    messages: [
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "toolu_1", type: "function", function: { name, arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "done" },
      { role: "user", content: "Summarize." },
    ],
  });
  assert.deepEqual(body.tools, [declared(name)]);
});

Deno.test("anthropic request: no tool blocks, no tools; the client's tools are sent as they are", () => {
  const plain = translate({ messages: [{ role: "user", content: "Hi" }] });
  assert.equal("tools" in plain, false);
  assert.equal("tool_choice" in plain, false);
  const own = translate({ messages: COMPACTION, tools: [WEATHER_TOOL] });
  assert.deepEqual((own.tools as { name: string }[]).map((t) => t.name), ["get_weather"]);
  assert.equal("tool_choice" in own, false);
});
