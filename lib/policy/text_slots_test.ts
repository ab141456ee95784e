import assert from "node:assert/strict";
import type { JsonObject } from "../openai/types.ts";
import { placeholderNamed } from "../openai/placeholder_filenames.ts";
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

Deno.test("a file's name is read and rewritten, whatever the file holds; a name the gateway gave is not read", () => {
  const pdf = "data:application/pdf;base64,JVBERi0=";
  const body: JsonObject = {
    model: "m",
    messages: [{
      role: "user",
      content: [
        { type: "file", file: { filename: "notes.txt", file_data: "data:text/plain;base64,aGk=" } },
        { type: "file", file: { filename: "bob@example.com.pdf", file_data: pdf } },
        { type: "file", file: placeholderNamed({ filename: "document", file_data: pdf }) },
        // A client's own `document` is its text, judged as written.
        { type: "file", file: { filename: "document", file_id: "file-1" } },
      ],
    }],
  };
  const slots = textSlots("chat", body);
  assert.deepEqual(slots.map((s) => [s.param, s.text]), [
    ["messages[0].content[0].file.file_data", "hi"],
    ["messages[0].content[0].file.filename", "notes.txt"],
    ["messages[0].content[1].file.filename", "bob@example.com.pdf"],
    ["messages[0].content[3].file.filename", "document"],
  ]);
  slots[2].write("<EMAIL_1>.pdf");
  const parts = (body.messages as JsonObject[])[0].content as JsonObject[];
  assert.deepEqual(parts[1], { type: "file", file: { filename: "<EMAIL_1>.pdf", file_data: pdf } });
});
