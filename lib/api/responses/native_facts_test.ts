import assert from "node:assert/strict";
import { responseFinishReason } from "./native_facts.ts";

Deno.test("native Responses finish reason: a completed answer asking the client to run a call is tool_calls", () => {
  // Every call the client's harness runs (Codex runs apply_patch and shell itself), not a hosted tool's.
  for (
    const type of [
      "function_call",
      "custom_tool_call",
      "local_shell_call",
      "computer_call",
      "apply_patch_call",
      "shell_call",
    ]
  ) {
    assert.equal(responseFinishReason({ status: "completed", output: [{ type }] }), "tool_calls", type);
  }
  // Hosted tools ran upstream: the answer is complete.
  for (const type of ["message", "web_search_call", "code_interpreter_call", "mcp_call", "reasoning"]) {
    assert.equal(responseFinishReason({ status: "completed", output: [{ type }] }), "stop", type);
  }
  assert.equal(
    responseFinishReason({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }),
    "length",
  );
  assert.equal(responseFinishReason({ status: "in_progress" }), undefined);
});
