import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { historyMessages } from "./input_items.ts";
import { parseResponsesRequest } from "./request.ts";

Deno.test("responses input items: items become messages, tool calls and tool results", () => {
  const { chat } = parseResponsesRequest({
    model: "m",
    input: [
      { role: "developer", content: [{ type: "input_text", text: "Rules." }] },
      {
        role: "user",
        content: [
          { type: "input_text", text: "What is this?" },
          { type: "input_image", image_url: "https://x/y.png" },
        ],
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me look." }] },
      { type: "function_call", call_id: "c1", name: "f", arguments: "{}" },
      { type: "function_call", call_id: "c2", name: "g", arguments: '{"a":1}' },
      { type: "reasoning", id: "rs_1", summary: [] },
      { type: "function_call_output", call_id: "c1", output: "one" },
      { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "two" }] },
    ],
  });
  assert.deepEqual(chat.messages, [
    { role: "developer", content: "Rules." },
    {
      role: "user",
      content: [
        { type: "text", text: "What is this?" },
        { type: "image_url", image_url: { url: "https://x/y.png", detail: "auto" } },
      ],
    },
    {
      role: "assistant",
      content: "Let me look.",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "f", arguments: "{}" } },
        { id: "c2", type: "function", function: { name: "g", arguments: '{"a":1}' } },
      ],
    },
    { role: "tool", tool_call_id: "c1", content: "one" },
    { role: "tool", tool_call_id: "c2", content: "two" },
  ]);
});

Deno.test("responses input items: a tool's output may hold images, sent after the turn's last tool output", () => {
  const screenshot = { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=" };
  const parsed = parseResponsesRequest({
    model: "m",
    input: [
      { role: "user", content: "Look at both pages." },
      { type: "function_call", call_id: "c1", name: "shot", arguments: "{}" },
      { type: "function_call", call_id: "c2", name: "shot", arguments: "{}" },
      {
        type: "function_call_output",
        call_id: "c1",
        output: [{ type: "input_text", text: "page 1" }, screenshot],
      },
      { type: "function_call_output", call_id: "c2", output: [screenshot] },
      { role: "user", content: "Which is better?" },
    ],
  });
  const image = { type: "image_url", image_url: { url: screenshot.image_url, detail: "auto" } };
  assert.deepEqual(parsed.chat.messages.slice(2), [
    { role: "tool", tool_call_id: "c1", content: "page 1" },
    { role: "tool", tool_call_id: "c2", content: "" },
    { role: "user", content: [{ type: "text", text: "(returned by the tool)" }, image, image] },
    { role: "user", content: "Which is better?" },
  ]);
  assert.equal(parsed.tolerance.refusal, null);
  // A file in a tool's output: only a native target reads it.
  const file = parseResponsesRequest({
    model: "m",
    input: [
      { type: "function_call", call_id: "c1", name: "read", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: [{ type: "input_file", file_id: "file-1" }] },
    ],
  });
  assert.notEqual(file.tolerance.refusal, null);
});

Deno.test("responses input items: item references are listed, then translated as the items they name", () => {
  const body = {
    model: "m",
    input: [
      { role: "user", content: "What is the weather?" },
      { type: "item_reference", id: "fc_1" },
      { type: "function_call_output", call_id: "call_1", output: "sunny" },
      { type: "item_reference", id: "msg_1" },
      { role: "user", content: "Thanks." },
    ],
  };
  const first = parseResponsesRequest(body);
  assert.deepEqual(first.references, ["fc_1", "msg_1"]);
  // Only references: nothing to answer yet, but nothing refused before they are looked up.
  assert.deepEqual(
    parseResponsesRequest({ model: "m", input: [{ type: "item_reference", id: "m" }] }).references,
    [
      "m",
    ],
  );

  const call = { id: "fc_1", type: "function_call", call_id: "call_1", name: "weather", arguments: "{}" };
  const answer = {
    id: "msg_1",
    type: "message",
    role: "assistant",
    status: "completed",
    content: [{ type: "output_text", text: "It is sunny.", annotations: [] }],
  };
  const second = parseResponsesRequest(
    body,
    new Map<string, JsonObject>([["fc_1", call], ["msg_1", answer]]),
  );
  assert.deepEqual(second.references, []);
  assert.deepEqual(second.input, [body.input[0], call, body.input[2], answer, body.input[4]]);
  assert.deepEqual(second.chat.messages, [
    { role: "user", content: "What is the weather?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_1", type: "function", function: { name: "weather", arguments: "{}" } }],
    },
    { role: "tool", tool_call_id: "call_1", content: "sunny" },
    { role: "assistant", content: "It is sunny." },
    { role: "user", content: "Thanks." },
  ]);
});

Deno.test("responses input items: a native response's built-in items are left out of a translated history", () => {
  const messages = historyMessages([
    { type: "message", role: "user", content: "Weather?" },
    { type: "reasoning", id: "rs_1", summary: [] },
    { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "w" } },
    {
      type: "message",
      role: "assistant",
      content: [{ type: "output_text", text: "Sunny.", annotations: [] }],
    },
  ]);
  assert.deepEqual(messages, [{ role: "user", content: "Weather?" }, {
    role: "assistant",
    content: "Sunny.",
  }]);
});

Deno.test("responses input items: a reasoning item's text is the reasoning_content of the assistant turn after it", () => {
  const call = { type: "function_call", call_id: "c1", name: "ls", arguments: "{}" };
  const summary = (...texts: string[]) => texts.map((text) => ({ type: "summary_text", text }));
  const { chat } = parseResponsesRequest({
    model: "m",
    input: [
      { role: "user", content: "List the files." },
      // Codex sends the output back as it got it (store: false): reasoning, then the call it led to.
      {
        type: "reasoning",
        id: "rs_1",
        summary: summary("I should list", "the files."),
        encrypted_content: null,
      },
      call,
      { type: "function_call_output", call_id: "c1", output: "a.txt" },
      // The model's own words (content) are preferred to its summary.
      {
        type: "reasoning",
        id: "rs_2",
        summary: summary("Summary."),
        content: [{ type: "reasoning_text", text: "Raw " }, { type: "reasoning_text", text: "thought." }],
      },
      { type: "message", role: "assistant", content: [{ type: "output_text", text: "One file." }] },
      // Encrypted reasoning alone has no text a chat upstream could read.
      { type: "reasoning", id: "rs_3", summary: [], encrypted_content: "gAAAA" },
      { type: "message", role: "assistant", content: "More?" },
      // Reasoning that no assistant turn follows goes nowhere.
      { type: "reasoning", id: "rs_4", summary: summary("Lost.") },
      { role: "user", content: "Thanks." },
    ],
  });
  assert.deepEqual(chat.messages, [
    { role: "user", content: "List the files." },
    {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "ls", arguments: "{}" } }],
      reasoning_content: "I should list\n\nthe files.",
    },
    { role: "tool", tool_call_id: "c1", content: "a.txt" },
    { role: "assistant", content: "One file.", reasoning_content: "Raw thought." },
    { role: "assistant", content: "More?" },
    { role: "user", content: "Thanks." },
  ]);
  // A call that joins the assistant message before it brings its reasoning to that message.
  const joined = historyMessages([
    { type: "message", role: "assistant", content: "Let me look." },
    { type: "reasoning", id: "rs_5", summary: summary("Look with ls.") },
    call,
  ]);
  assert.equal(joined.length, 1);
  assert.equal(joined[0].reasoning_content, "Look with ls.");
  assert.throws(
    () =>
      parseResponsesRequest({
        model: "m",
        input: [{ type: "reasoning", summary: [{ type: "summary_text" }] }],
      }),
    /input\[0\]\.summary\[0\]\.text/,
  );
});
