import assert from "node:assert/strict";
import { messagesEventShows } from "./native_start.ts";

Deno.test("messages native start: the preamble and empty blocks show nothing; deltas, tool calls and the end do", () => {
  const held = [
    { type: "message_start", message: { id: "msg_1", content: [] } },
    { type: "ping" },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    {
      type: "content_block_start",
      index: 0,
      content_block: { type: "thinking", thinking: "", signature: "" },
    },
  ];
  for (const event of held) assert.equal(messagesEventShows(event), false, JSON.stringify(event));
  const shown = [
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "Hi" } },
    {
      type: "content_block_start",
      index: 1,
      content_block: { type: "tool_use", id: "t", name: "f", input: {} },
    },
    { type: "content_block_start", index: 0, content_block: { type: "redacted_thinking", data: "x" } },
    { type: "message_delta", delta: { stop_reason: "end_turn" } },
    { type: "message_stop" },
    { type: "a_new_event_type" },
  ];
  for (const event of shown) assert.equal(messagesEventShows(event), true, JSON.stringify(event));
});
