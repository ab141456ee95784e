/**
 * A history with tool calls and results but no `tools` (what opencode sends to have a session summarized):
 * Converse refuses `toolUse` / `toolResult` blocks without a `toolConfig`, so the history's tools are declared,
 * with any input, and no tool choice (Converse has no "none"; `auto` is its default).
 */
import assert from "node:assert/strict";
import type { ChatMessage, ChatRequest } from "../../openai/types.ts";
import { HISTORY_PLACEHOLDER_TOOL, HISTORY_TOOL_DESCRIPTION } from "../shared/history_tools.ts";
import { type ConverseMessage, toConverseRequest } from "./request.ts";
import { req, TOOL_USE_ID, TOP_SONG_TOOL } from "./request_test_helpers.ts";

/** AWS's top_song exchange, then the ask for a summary, and no tools. */
const COMPACTION = [
  { role: "user", content: "What is the most popular song on WZPZ?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{
      id: TOOL_USE_ID,
      type: "function",
      function: { name: "top_song", arguments: '{"sign":"WZPZ"}' },
    }],
  },
  { role: "tool", tool_call_id: TOOL_USE_ID, content: '{"song":"Elemental Hotel","artist":"8 Storey Hike"}' },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "t2", type: "function", function: { name: "top_song", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: "t2", content: "unknown" },
  { role: "user", content: "Summarize the conversation so far." },
] as ChatRequest["messages"];

const declared = (name: string) => ({
  toolSpec: { name, description: HISTORY_TOOL_DESCRIPTION, inputSchema: { json: { type: "object" } } },
});

Deno.test("bedrock request: tool history without tools declares the history's tools, each once, with no tool choice", () => {
  for (const model of ["amazon.nova-pro-v1:0", "anthropic.claude-3-7-sonnet-20250219-v1:0"]) {
    for (const extra of [{}, { tools: [] }, { tool_choice: "none" }, { tool_choice: "auto" }]) {
      const body = toConverseRequest(req({ messages: COMPACTION, ...extra }), model);
      assert.deepEqual(
        body.toolConfig,
        { tools: [declared("top_song")] },
        `${model} ${JSON.stringify(extra)}`,
      );
      const turns = body.messages as { content: Record<string, unknown>[] }[];
      assert.ok("toolUse" in turns[1].content[0]);
    }
  }
});

Deno.test("bedrock request: only tool results (their calls cut) declare a placeholder tool", () => {
  const body = toConverseRequest(req({
    messages: [
      { role: "tool", tool_call_id: TOOL_USE_ID, content: "ok" },
      { role: "user", content: "Summarize." },
    ] as ChatRequest["messages"],
  }));
  assert.deepEqual(body.toolConfig, { tools: [declared(HISTORY_PLACEHOLDER_TOOL)] });
});

Deno.test("bedrock request: no tool blocks, no toolConfig; the client's tools are sent as they are", () => {
  const plain = toConverseRequest(req({ messages: [{ role: "user", content: "Hi" }] }));
  assert.equal("toolConfig" in plain, false);
  const own = toConverseRequest(req({ messages: COMPACTION, tools: [TOP_SONG_TOOL] }));
  const tools = (own.toolConfig as { tools: { toolSpec: { name: string; description?: string } }[] }).tools;
  assert.deepEqual(tools.map((t) => t.toolSpec.description), [TOP_SONG_TOOL.function.description]);
});

Deno.test("bedrock request: a tool result carries its status only to Nova and Claude, the models AWS documents it for", () => {
  const messages: ChatMessage[] = [
    { role: "user", content: "Top song?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: TOOL_USE_ID, type: "function", function: { name: "top_song", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: TOOL_USE_ID, content: "Elemental Hotel" },
  ];
  const statusFor = (model: string) => {
    const turns = toConverseRequest(req({ messages, tools: [TOP_SONG_TOOL] }), model)
      .messages as ConverseMessage[];
    const result = turns[2].content[0] as { toolResult: { status?: string } };
    return result.toolResult.status;
  };
  assert.equal(statusFor("us.amazon.nova-pro-v1:0"), "success");
  assert.equal(statusFor("anthropic.claude-3-7-sonnet-20250219-v1:0"), "success");
  for (
    const model of ["us.writer.palmyra-x5-v1:0", "meta.llama3-3-70b-instruct-v1:0", "openai.gpt-oss-120b-1:0"]
  ) {
    assert.equal(statusFor(model), undefined, model);
  }
});
