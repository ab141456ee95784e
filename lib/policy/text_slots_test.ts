import assert from "node:assert/strict";
import type { JsonObject } from "../openai/types.ts";
import { textSlots } from "./text_slots.ts";

Deno.test("a custom tool's call in the history: its input is read and rewritten as a function call's arguments are", () => {
  const body: JsonObject = {
    model: "m",
    messages: [
      { role: "user", content: "find TODOs" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "ls", arguments: '{"dir":"src"}' } },
          { id: "call_1", type: "custom", custom: { name: "grep", input: "secret-123" } },
        ],
      },
    ],
  };
  assert.deepEqual(textSlots("chat", body).map((s) => s.param), ["messages[0].content"]);
  const slots = textSlots("chat", body, { toolArguments: true });
  assert.deepEqual(slots.map((s) => [s.param, s.text]), [
    ["messages[0].content", "find TODOs"],
    ["messages[1].tool_calls[0].function.arguments", '{"dir":"src"}'],
    ["messages[1].tool_calls[1].custom.input", "secret-123"],
  ]);
  slots[2].write("[redacted]");
  const calls = (body.messages as JsonObject[])[1].tool_calls as JsonObject[];
  assert.deepEqual(calls[1].custom, { name: "grep", input: "[redacted]" });
});
