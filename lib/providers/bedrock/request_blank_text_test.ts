/**
 * Converse refuses blank text ("The text field in the ContentBlock object at messages.N.content.M is blank"):
 * what the translation sends instead of empty or whitespace-only text parts and empty tool results.
 */
import assert from "node:assert/strict";
import { type ConverseMessage, toConverseRequest } from "./request.ts";
import { req, TOOL_USE_ID, TOP_SONG_TOOL } from "./request_test_helpers.ts";

Deno.test("bedrock request: blank text parts are left out; an empty tool result is an empty JSON object", () => {
  const body = toConverseRequest(req({
    messages: [
      { role: "developer", content: [{ type: "text", text: "\t" }] },
      { role: "user", content: [{ type: "text", text: "Top song?" }, { type: "text", text: " " }] },
      {
        role: "assistant",
        content: "\n\n",
        tool_calls: [{ id: TOOL_USE_ID, type: "function", function: { name: "top_song", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: TOOL_USE_ID, content: [{ type: "text", text: "  " }] },
    ],
    tools: [TOP_SONG_TOOL],
  }));
  assert.deepEqual(body, {
    messages: [
      { role: "user", content: [{ text: "Top song?" }] },
      { role: "assistant", content: [{ toolUse: { toolUseId: TOOL_USE_ID, name: "top_song", input: {} } }] },
      {
        role: "user",
        content: [{ toolResult: { toolUseId: TOOL_USE_ID, content: [{ json: {} }] } }],
      },
    ],
    toolConfig: {
      tools: [{
        toolSpec: {
          name: "top_song",
          description: TOP_SONG_TOOL.function.description,
          inputSchema: { json: TOP_SONG_TOOL.function.parameters },
        },
      }],
      toolChoice: { auto: {} },
    },
  });
  const empty = toConverseRequest(req({
    messages: [{ role: "user", content: "Top song?" }, {
      role: "assistant",
      content: null,
      tool_calls: [{ id: TOOL_USE_ID, type: "function", function: { name: "top_song", arguments: "{}" } }],
    }, { role: "tool", tool_call_id: TOOL_USE_ID, content: "" }],
  }));
  assert.deepEqual((empty.messages as ConverseMessage[])[2].content, [
    { toolResult: { toolUseId: TOOL_USE_ID, content: [{ json: {} }] } },
  ]);
  // Text with words keeps its whitespace as sent.
  const kept = toConverseRequest(req({ messages: [{ role: "user", content: "  Hi\n" }] }));
  assert.deepEqual(kept.messages, [{ role: "user", content: [{ text: "  Hi\n" }] }]);
});
