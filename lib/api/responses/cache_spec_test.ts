import assert from "node:assert/strict";
import { responsesCacheSpec } from "./cache_spec.ts";

// The opt-in to a beta changes the answer (it turns the beta's fields on): an answer made with it is kept apart
// from one made without, and a request without it keeps the key it had before the opt-in was keyed.
Deno.test("responses cache spec: the openai-beta names are keyed when sent", () => {
  const body = { model: "m", input: "hi" };
  assert.deepEqual(responsesCacheSpec(body).keyed, { store: true });
  assert.deepEqual(responsesCacheSpec(body, { header: null, query: true }).keyed, { store: true });
  assert.deepEqual(responsesCacheSpec(body, { header: "responses_multi_agent=v1", query: true }).keyed, {
    store: true,
    beta: "responses_multi_agent=v1",
  });
});

// An answer that hands the client a call is `cache_tool_calls`' (off by default): a hit would hand a coding agent
// the same command again (`rm -rf build`) without the model being asked. Every kind of client call, whole or
// streamed, including one an upstream's final event leaves out of its `output`.
Deno.test("responses cache spec: an answer ending in any call for the client ends in tool calls", () => {
  const spec = responsesCacheSpec({ model: "m", input: "hi" });
  const calls = [
    { type: "function_call", id: "fc_1", call_id: "c1", name: "f", arguments: "{}" },
    { type: "custom_tool_call", id: "ctc_1", call_id: "c2", name: "g", input: "x" },
    { type: "computer_call", id: "cu_1", call_id: "c3", action: { type: "screenshot" } },
    { type: "local_shell_call", id: "ls_1", call_id: "c4", action: { type: "exec", command: ["ls"] } },
    { type: "shell_call", id: "sh_1", call_id: "c5", action: { commands: ["rm -rf build"] } },
    { type: "apply_patch_call", id: "ap_1", call_id: "c6", operation: { type: "delete_file", path: "a" } },
    { type: "mcp_approval_request", id: "mcpr_1", name: "deploy", server_label: "ops", arguments: "{}" },
    { type: "tool_search_call", id: "ts_1", call_id: "c7", execution: "client", arguments: {} },
  ];
  const message = { type: "message", role: "assistant", content: [{ type: "output_text", text: "ok" }] };
  for (const call of calls) {
    const response = {
      object: "response",
      status: "completed",
      output: [message, { ...call, status: "completed" }],
    };
    assert.equal(spec.ending([response]), "tool_calls", `${call.type}, whole`);
    const events = [
      { type: "response.created", response: { ...response, status: "in_progress", output: [] } },
      { type: "response.output_item.done", output_index: 0, item: message },
      { type: "response.output_item.added", output_index: 1, item: { ...call, status: "in_progress" } },
      { type: "response.output_item.done", output_index: 1, item: { ...call, status: "completed" } },
    ];
    assert.equal(
      spec.ending([...events, { type: "response.completed", response }]),
      "tool_calls",
      `${call.type}, streamed`,
    );
    assert.equal(
      spec.ending([...events, { type: "response.completed", response: { ...response, output: [] } }]),
      "tool_calls",
      `${call.type}, streamed, left out of the final output`,
    );
  }
  // What ran upstream ended the answer whole.
  const hosted = [
    message,
    { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "q" } },
    {
      type: "shell_call",
      id: "sh_2",
      call_id: "c8",
      action: { commands: ["ls"] },
      environment: { type: "container_reference", container_id: "cntr_1" },
    },
    { type: "tool_search_call", id: "ts_2", execution: "server", arguments: {} },
  ];
  const whole = { object: "response", status: "completed", output: hosted };
  assert.equal(spec.ending([whole]), "complete");
  assert.equal(spec.ending([{ type: "response.completed", response: whole }]), "complete");
});
