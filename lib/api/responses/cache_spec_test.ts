import assert from "node:assert/strict";
import { responsesCacheSpec } from "./cache_spec.ts";

/** A whole answer's one choice: handing the client a call, or not; neither cut off. */
const CALLS = [{ calls: true, cut: false }];
const WHOLE = [{ calls: false, cut: false }];

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
    assert.deepEqual(spec.ending([response]), CALLS, `${call.type}, whole`);
    const events = [
      { type: "response.created", response: { ...response, status: "in_progress", output: [] } },
      { type: "response.output_item.done", output_index: 0, item: message },
      { type: "response.output_item.added", output_index: 1, item: { ...call, status: "in_progress" } },
      { type: "response.output_item.done", output_index: 1, item: { ...call, status: "completed" } },
    ];
    assert.deepEqual(
      spec.ending([...events, { type: "response.completed", response }]),
      CALLS,
      `${call.type}, streamed`,
    );
    assert.deepEqual(
      spec.ending([...events, { type: "response.completed", response: { ...response, output: [] } }]),
      CALLS,
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
  assert.deepEqual(spec.ending([whole]), WHOLE);
  assert.deepEqual(spec.ending([{ type: "response.completed", response: whole }]), WHOLE);
});

// A Response cut off (`incomplete`) in the middle of its calls still hands the client a call: it is both, kept
// only under both opt-ins (lib/cache/opt_ins.ts), as a chat-form answer cut off in its tool calls is.
Deno.test("responses cache spec: an incomplete answer is cut off, and calls the client when it holds a call", () => {
  const spec = responsesCacheSpec({ model: "m", input: "hi" });
  const call = { type: "function_call", id: "fc_1", call_id: "c1", name: "f", arguments: "{}" };
  const text = { type: "message", role: "assistant", content: [{ type: "output_text", text: "par" }] };
  const cut = (output: unknown[]) => ({ object: "response", status: "incomplete", output });
  assert.deepEqual(spec.ending([cut([text])]), [{ calls: false, cut: true }]);
  assert.deepEqual(spec.ending([cut([text, call])]), [{ calls: true, cut: true }]);
  assert.deepEqual(
    spec.ending([
      { type: "response.output_item.added", output_index: 0, item: call },
      { type: "response.incomplete", response: cut([]) },
    ]),
    [{ calls: true, cut: true }],
  );
  // Not ended: no verdict.
  assert.equal(spec.ending([{ object: "response", status: "in_progress", output: [] }]), undefined);
});
