import assert from "node:assert/strict";
import type { ResolvedContentRule } from "../../config/types.ts";
import type { JsonObject } from "../../openai/types.ts";
import { applyContentRules } from "../../policy/content_rules.ts";
import type { PolicyDenied } from "../../policy/denied.ts";
import { nativeRequestTexts, responsesTexts } from "./native_texts.ts";
import { redactNative } from "./native.ts";

const RULES = [
  { name: "r", regex: /\d{4}-\d{4}/, action: "redact", message: null, replacement: "[card]" },
  { name: "d", regex: /never/, action: "deny", message: null, replacement: "" },
] as ResolvedContentRule[];

Deno.test("native texts: every text item, tool output, reasoning part and plain-text file, at its param", () => {
  const body = {
    instructions: "be brief",
    input: [
      { role: "user", content: "hi" },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "a" }, { type: "refusal", refusal: "b" }],
      },
      { type: "function_call", call_id: "c", name: "f", arguments: '{"x":1}' },
      { type: "function_call_output", call_id: "c", output: "c" },
      { type: "custom_tool_call_output", call_id: "d", output: [{ type: "input_text", text: "d" }] },
      { type: "reasoning", summary: [{ type: "summary_text", text: "e" }], encrypted_content: "opaque" },
      { role: "user", content: [{ type: "input_file", file_data: "data:text/plain;base64,Zg==" }] },
      { role: "user", content: [{ type: "input_file", file_data: "data:application/pdf;base64,Zg==" }] },
    ],
  };
  assert.deepEqual(responsesTexts(body).map(({ param, text }) => [param, text]), [
    ["instructions", "be brief"],
    ["input[0].content", "hi"],
    ["input[1].content[0].text", "a"],
    ["input[1].content[1].refusal", "b"],
    ["input[3].output", "c"],
    ["input[4].output[0].text", "d"],
    ["input[5].summary[0].text", "e"],
    ["input[6].content[0].file_data", "f"],
  ]);
});

Deno.test("native texts: a file's name, whatever the file holds, in a message and in a tool's output; written back in place", () => {
  const pdf = { type: "input_file", filename: "b.pdf", file_data: "data:application/pdf;base64,Zg==" };
  const body = {
    input: [
      {
        role: "user",
        content: [
          { type: "input_file", filename: "a.txt", file_data: "data:text/plain;base64,Zg==" },
          pdf,
          { type: "input_file", file_id: "file-1" },
        ],
      },
      {
        type: "function_call_output",
        call_id: "c",
        output: [{ type: "input_file", filename: "c.pdf", file_id: "f" }],
      },
    ],
  };
  const slots = responsesTexts(body);
  assert.deepEqual(slots.map(({ param, text }) => [param, text]), [
    ["input[0].content[0].file_data", "f"],
    ["input[0].content[0].filename", "a.txt"],
    ["input[0].content[1].filename", "b.pdf"],
    ["input[1].output[0].filename", "c.pdf"],
  ]);
  slots[2].write("[name].pdf");
  assert.deepEqual(pdf, {
    type: "input_file",
    filename: "[name].pdf",
    file_data: "data:application/pdf;base64,Zg==",
  });
});

Deno.test("native texts: the built-in tools' items, each text a native target reads at its param", () => {
  const body = {
    input: [
      { type: "local_shell_call_output", id: "ls", output: "a" },
      {
        type: "shell_call_output",
        call_id: "s",
        output: [
          { stdout: "b", stderr: "c", outcome: { type: "exit", exit_code: 0 } },
          { stdout: "d", stderr: "", outcome: { type: "timeout" } },
        ],
      },
      { type: "apply_patch_call_output", call_id: "p", status: "failed", output: "e" },
      { type: "mcp_call", id: "m1", server_label: "x", name: "n", arguments: '{"q":"args"}', output: "f" },
      { type: "mcp_call", id: "m2", server_label: "x", name: "n", arguments: "{}", error: "g" },
      {
        type: "mcp_call",
        id: "m3",
        server_label: "x",
        name: "n",
        arguments: "{}",
        error: { type: "http_error", code: 500, message: "h" },
      },
      {
        type: "mcp_call",
        id: "m4",
        server_label: "x",
        name: "n",
        arguments: "{}",
        error: { type: "mcp_tool_execution_error", content: [{ type: "text", text: "i" }] },
      },
      {
        type: "mcp_list_tools",
        id: "l",
        server_label: "x",
        tools: [{ name: "t", description: "no" }],
        error: "j",
      },
      { type: "mcp_approval_response", approval_request_id: "r", approve: false, reason: "k" },
      { type: "custom_tool_call_output", call_id: "c", output: "l" },
      {
        type: "computer_call_output",
        call_id: "cc",
        output: { type: "computer_screenshot", image_url: "https://x" },
      },
      { type: "shell_call", call_id: "s", action: { commands: ["ls"] } },
    ],
  };
  assert.deepEqual(responsesTexts(body).map(({ param, text }) => [param, text]), [
    ["input[0].output", "a"],
    ["input[1].output[0].stdout", "b"],
    ["input[1].output[0].stderr", "c"],
    ["input[1].output[1].stdout", "d"],
    ["input[1].output[1].stderr", ""],
    ["input[2].output", "e"],
    ["input[3].output", "f"],
    ["input[4].error", "g"],
    ["input[5].error.message", "h"],
    ["input[6].error.content[0].text", "i"],
    ["input[7].error", "j"],
    ["input[8].reason", "k"],
    ["input[9].output", "l"],
  ]);
});

Deno.test("native redaction: a redacted copy, the client's body untouched; the body itself when nothing matched", () => {
  const client: JsonObject = {
    input: [
      { type: "function_call_output", call_id: "c", output: "1234-5678" },
      { type: "reasoning", summary: [{ type: "summary_text", text: "1111-2222" }] },
    ],
  };
  const before = structuredClone(client);
  const sent = redactNative(client, RULES);
  assert.deepEqual(client, before, "the client's items are stored and resent: never changed");
  assert.deepEqual(sent.input, [
    { type: "function_call_output", call_id: "c", output: "[card]" },
    { type: "reasoning", summary: [{ type: "summary_text", text: "[card]" }] },
  ]);
  const clean = { input: "nothing here" };
  assert.equal(redactNative(clean, RULES), clean);
});

Deno.test("native texts: the policy judges them beside the chat form, the history's under previous_response_id", () => {
  const parsed = { params: { instructions: null }, input: [{ role: "user", content: "hi" }] };
  const history = [{ type: "reasoning", summary: [{ type: "summary_text", text: "never" }] }];
  const chat = { model: "m", messages: [{ role: "user", content: "hi" }] };
  assert.throws(
    () => applyContentRules("responses", chat, RULES, nativeRequestTexts(parsed, history)),
    (err: PolicyDenied) => err.param === "previous_response_id",
  );
  const redact = applyContentRules("responses", chat, RULES, [{ param: "input[0]", text: "1234-5678" }]);
  assert.deepEqual(redact, { outcome: "modify", rules: ["alias.content:r"] });
  assert.deepEqual(chat.messages[0].content, "hi", "a native text is read, never written");
});
