import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { historyMessages } from "./input_items.ts";
import { parseResponsesRequest } from "./request.ts";

Deno.test("responses native-only: built-in tools, their items and tool choices are kept for native targets", () => {
  const plain = parseResponsesRequest({ model: "m", input: "x", tools: [{ type: "function", name: "f" }] });
  assert.deepEqual(
    plain.tolerance,
    { refusal: null, native: [], dropped: [] },
    "function tools need no native target",
  );
  // A built-in tool or tool choice: native targets preferred, a translated one answers without it.
  const preferred: [JsonObject, string[]][] = [
    [{ tools: [{ type: "function", name: "f" }, { type: "web_search" }] }, ["tools[1]"]],
    [{ tools: [{ type: "mcp", server_label: "s" }, { type: "file_search" }] }, ["tools[0]", "tools[1]"]],
    [{ tool_choice: { type: "web_search_preview" } }, ["tool_choice"]],
  ];
  for (const [fields, paths] of preferred) {
    const { tolerance } = parseResponsesRequest({ model: "m", input: "x", ...fields });
    assert.deepEqual(tolerance, { refusal: null, native: paths, dropped: [] }, JSON.stringify(fields));
  }
  // A built-in tool's item in the input is content the model must read: native targets only, else a 400.
  const item = parseResponsesRequest({
    model: "m",
    input: [{ role: "user", content: "x" }, { type: "web_search_call", id: "ws_1", status: "completed" }],
  });
  const error = item.tolerance.refusal;
  assert.ok(error);
  assert.deepEqual([error.status, error.param, error.code], [400, "input[1].type", "unsupported_value"]);
  assert.match(error.message, /'web_search_call'/);
  assert.match(error.message, /native_responses/);
  const web = parseResponsesRequest({ model: "m", input: "x", tools: [{ type: "web_search" }] });
  assert.deepEqual(web.params.tools, [{ type: "web_search" }], "echoed as given");
  assert.equal(web.chat.tools, undefined, "the chat form has no built-in tools");
  // Only built-in items (an MCP approval answering a previous response) are a native target's to judge.
  const approval = parseResponsesRequest({
    model: "m",
    input: [{ type: "mcp_approval_response", approval_request_id: "mcpr_1", approve: true }],
  });
  assert.equal(approval.tolerance.refusal?.param, "input[0].type");
});

Deno.test("responses native-only: program items and items of unknown types are a native target's to read", () => {
  const program = { type: "program", id: "prog_1", call_id: "c1", code: "1", fingerprint: "fp" };
  const output = { type: "program_output", id: "po_1", call_id: "c1", result: "2", status: "completed" };
  const unknown = { type: "teleport", to: "mars" };
  // In the request's own input: native targets only; an alias without one refuses, naming the item.
  const own = parseResponsesRequest({
    model: "m",
    input: [{ role: "user", content: "x" }, program, unknown],
  });
  assert.equal(own.tolerance.refusal?.param, "input[1].type");
  assert.match(own.tolerance.refusal?.message ?? "", /'program'.*native_responses/);
  assert.deepEqual(own.input.slice(1), [program, unknown], "kept as sent for the native target");
  const alone = parseResponsesRequest({ model: "m", input: [{ role: "user", content: "x" }, unknown] });
  assert.equal(alone.tolerance.refusal?.param, "input[1].type");
  assert.match(alone.tolerance.refusal?.message ?? "", /Invalid value: 'teleport'/);
  // A type that is not a string is still the request's own error.
  assert.throws(
    () => parseResponsesRequest({ model: "m", input: [{ type: 7 }] }),
    (err) => err instanceof GatewayError && err.param === "input[0].type",
  );
  // In a stored conversation (a native upstream's output): left out for a translated target.
  const history = historyMessages([
    { type: "message", role: "user", content: "Add." },
    program,
    output,
    unknown,
    { type: "message", role: "assistant", content: [{ type: "output_text", text: "2", annotations: [] }] },
  ]);
  assert.deepEqual(history, [{ role: "user", content: "Add." }, { role: "assistant", content: "2" }]);
});

Deno.test("responses native-only: moderation and prompt_cache_options are the spec's, judged rather than unknown", () => {
  // Moderation in `block` mode withholds what it flags: a translated target would answer unmoderated.
  const moderated = parseResponsesRequest({
    model: "m",
    input: "x",
    moderation: { model: "omni-moderation-latest", policy: { output: { mode: "block" } } },
  });
  assert.deepEqual(moderated.tolerance.dropped, [], "not an unknown parameter");
  const error = moderated.tolerance.refusal;
  assert.ok(error);
  assert.deepEqual([error.status, error.param, error.code], [400, "moderation", "unsupported_value"]);
  // Cache options change no answer: a native target applies them, a translated one goes without.
  const cached = parseResponsesRequest({
    model: "m",
    input: "x",
    prompt_cache_options: { ttl: "30m", mode: "explicit" },
  });
  assert.deepEqual(cached.tolerance, { refusal: null, native: ["prompt_cache_options"], dropped: [] });
  for (
    const [fields, param] of [
      [{ moderation: "on" }, "moderation"],
      [{ moderation: {} }, "moderation.model"],
      [{ prompt_cache_options: "30m" }, "prompt_cache_options"],
    ] as const
  ) {
    assert.throws(() => parseResponsesRequest({ model: "m", input: "x", ...fields }), (err: GatewayError) => {
      assert.deepEqual([err.status, err.param], [400, param]);
      return true;
    });
  }
});
