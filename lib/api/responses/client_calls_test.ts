import assert from "node:assert/strict";
import { callsClient, isClientCall } from "./client_calls.ts";

Deno.test("client calls: every call the client (or its user) acts on, and no call that ran upstream", () => {
  const client = [
    { type: "function_call" },
    { type: "custom_tool_call" },
    { type: "computer_call" },
    { type: "local_shell_call" },
    { type: "shell_call" },
    { type: "shell_call", environment: { type: "local" } },
    { type: "apply_patch_call" },
    { type: "mcp_approval_request" },
    { type: "tool_search_call", execution: "client" },
  ];
  for (const item of client) assert.ok(isClientCall(item), JSON.stringify(item));
  const upstream = [
    { type: "message" },
    { type: "reasoning" },
    { type: "web_search_call" },
    { type: "file_search_call" },
    { type: "code_interpreter_call" },
    { type: "image_generation_call" },
    { type: "mcp_call" },
    { type: "mcp_list_tools" },
    { type: "tool_search_call", execution: "server" },
    { type: "shell_call", environment: { type: "container_reference", container_id: "cntr_1" } },
    { type: "shell_call_output" },
    null,
    "function_call",
  ];
  for (const item of upstream) assert.ok(!isClientCall(item), JSON.stringify(item));
  assert.ok(callsClient({ output: [{ type: "message" }, { type: "shell_call" }] }));
  assert.ok(!callsClient({ output: [{ type: "message" }] }));
  assert.ok(!callsClient({}));
});
