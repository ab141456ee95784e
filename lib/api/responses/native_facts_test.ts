import assert from "node:assert/strict";
import { responseFinishReason } from "./native_facts.ts";

Deno.test("native Responses finish reason: a completed answer asking the client to run a call is tool_calls", () => {
  // Every call the client's harness runs (Codex runs apply_patch and shell itself) or its user approves, not a
  // hosted tool's (the list the response cache reads too: client_calls.ts).
  for (
    const type of [
      "function_call",
      "custom_tool_call",
      "local_shell_call",
      "computer_call",
      "apply_patch_call",
      "shell_call",
      "mcp_approval_request",
    ]
  ) {
    assert.equal(responseFinishReason({ status: "completed", output: [{ type }] }), "tool_calls", type);
  }
  const clientSearch = { type: "tool_search_call", execution: "client" };
  assert.equal(responseFinishReason({ status: "completed", output: [clientSearch] }), "tool_calls");
  // Hosted tools ran upstream: the answer is complete.
  for (const type of ["message", "web_search_call", "code_interpreter_call", "mcp_call", "reasoning"]) {
    assert.equal(responseFinishReason({ status: "completed", output: [{ type }] }), "stop", type);
  }
  const hostedShell = { type: "shell_call", environment: { type: "container_reference", container_id: "c" } };
  const serverSearch = { type: "tool_search_call", execution: "server" };
  for (const item of [hostedShell, serverSearch]) {
    assert.equal(responseFinishReason({ status: "completed", output: [item] }), "stop", JSON.stringify(item));
  }
  assert.equal(
    responseFinishReason({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }),
    "length",
  );
  assert.equal(responseFinishReason({ status: "in_progress" }), undefined);
});
