/**
 * A native Responses target that reports no usage has its answer counted by the gateway (`tokens_estimated`):
 * what the model wrote in a call is output, counted as a message's text is, in a JSON answer and in a stream,
 * never left out as if the answer had said nothing: a custom (freeform) tool's call `input`
 * (`response.custom_tool_call_input.delta`), the `code` of a code interpreter call
 * (`response.code_interpreter_call_code.delta`), an MCP call's `arguments` (`response.mcp_call_arguments.delta`),
 * an apply_patch call's `operation.diff` (`response.apply_patch_call_operation_diff.delta`), a shell call's
 * `action.commands` (`response.shell_call_command.delta`) and a local shell call's `action.command` (no event
 * streams it: the item arrives whole).
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import type { JsonObject } from "../../lib/openai/types.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { type InProcessGateway, inProcessGateway } from "../helpers/in_process.ts";

const TOKEN = "gw-native-custom-usage-0123456789";
const TEXT = "*** Begin Patch\n*** Update File: src/main.ts\n-const a = 1;\n+const a = 2;\n*** End Patch";

type Kind =
  | "message"
  | "custom_tool_call"
  | "code_interpreter_call"
  | "mcp_call"
  | "apply_patch_call"
  | "shell_call"
  | "local_shell_call";

/**
 * The output item the upstream says {@linkcode TEXT} in, with the event that streams a piece of its text (none:
 * the item arrives whole).
 */
const ITEMS: Record<Kind, { item: (text: string) => JsonObject; delta?: (text: string) => JsonObject }> = {
  message: {
    item: (text) => ({ type: "message", role: "assistant", content: [{ type: "output_text", text }] }),
    delta: (text) => ({
      type: "response.output_text.delta",
      item_id: "item_1",
      content_index: 0,
      delta: text,
    }),
  },
  custom_tool_call: {
    item: (input) => ({ type: "custom_tool_call", call_id: "call_1", name: "apply_patch", input }),
    delta: (text) => ({ type: "response.custom_tool_call_input.delta", item_id: "item_1", delta: text }),
  },
  code_interpreter_call: {
    item: (code) => ({ type: "code_interpreter_call", container_id: "cntr_1", code, outputs: null }),
    delta: (text) => ({ type: "response.code_interpreter_call_code.delta", item_id: "item_1", delta: text }),
  },
  mcp_call: {
    item: (args) => ({ type: "mcp_call", server_label: "fs", name: "patch", arguments: args, output: null }),
    delta: (text) => ({ type: "response.mcp_call_arguments.delta", item_id: "item_1", delta: text }),
  },
  apply_patch_call: {
    item: (diff) => ({
      type: "apply_patch_call",
      call_id: "call_1",
      status: "completed",
      operation: { type: "update_file", path: "src/main.ts", diff },
    }),
    delta: (text) => ({
      type: "response.apply_patch_call_operation_diff.delta",
      item_id: "item_1",
      delta: text,
    }),
  },
  shell_call: {
    item: (command) => ({
      type: "shell_call",
      call_id: "call_1",
      action: { commands: command === "" ? [] : [command], timeout_ms: null, max_output_length: null },
      status: "completed",
      environment: null,
    }),
    // Named by its output_index only, as OpenAI's shell command events are.
    delta: (text) => ({ type: "response.shell_call_command.delta", command_index: 0, delta: text }),
  },
  local_shell_call: {
    item: (command) => ({
      type: "local_shell_call",
      call_id: "call_1",
      action: { type: "exec", command: [command], env: {} },
      status: "completed",
    }),
  },
};

/** The pieces the upstream streams {@linkcode TEXT} of `kind` in: one, whole, when no event streams it. */
function pieces(kind: Kind): string[] {
  return ITEMS[kind].delta === undefined ? [TEXT] : [TEXT.slice(0, 20), TEXT.slice(20)];
}

/**
 * A Responses upstream answering {@linkcode TEXT} as `kind`, without any usage; streamed, in `streamed`'s
 * pieces.
 */
function startUpstream(kind: Kind, streamed: readonly string[]) {
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (request) => {
    const body = await request.json() as JsonObject;
    const item = (text: string) => ({ id: "item_1", ...ITEMS[kind].item(text) });
    const response = (output: unknown[], status: string) => ({
      id: "resp_u",
      object: "response",
      created_at: 1,
      model: "m",
      status,
      output,
    });
    if (body.stream !== true) return Response.json(response([item(TEXT)], "completed"));
    const { delta } = ITEMS[kind];
    const deltas = delta === undefined ? [] : streamed.map((text) => ({ ...delta(text), output_index: 0 }));
    const events: JsonObject[] = [
      { type: "response.created", response: response([], "in_progress") },
      { type: "response.output_item.added", output_index: 0, item: item(delta === undefined ? TEXT : "") },
      ...deltas,
      { type: "response.output_item.done", output_index: 0, item: item(TEXT) },
      { type: "response.completed", response: response([item(TEXT)], "completed") },
    ];
    const sse = events.map((e, i) =>
      `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: i })}\n\n`
    );
    return new Response(sse.join(""), { headers: { "content-type": "text/event-stream" } });
  });
  return { baseURL: `http://127.0.0.1:${server.addr.port}/v1`, stop: () => server.shutdown() };
}

function gateway(baseURL: string): InProcessGateway {
  return inProcessGateway(`
providers:
  up: { type: openai, base_url: "${baseURL}", api_key: sk-scripted-0123456789, native_responses: true }
models:
  chat: { type: chat, targets: [ { provider: up, model: m, retries: 0 } ] }
tokens:
  - { name: app, sha256: ${hashToken(TOKEN)}, models: ["*"] }
`);
}

/**
 * The usage record of one request answered as `kind`, JSON or streamed in `streamed`'s pieces (its record is
 * written as it ends).
 */
async function recordOf(kind: Kind, stream: boolean, streamed = pieces(kind)): Promise<UsageRecord> {
  const up = startUpstream(kind, streamed);
  try {
    const gw = gateway(up.baseURL);
    const res = await gw.fetch("/v1/responses", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat",
        stream,
        store: false,
        tools: [{ type: "custom", name: "apply_patch" }],
        input: "patch",
      }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert(text.includes("End Patch"), text);
    for (let waited = 0; gw.records.length === 0 && waited < 5000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(gw.records.length, 1);
    return gw.records[0];
  } finally {
    await up.stop();
  }
}

for (const stream of [false, true]) {
  const calls = [
    "custom_tool_call",
    "code_interpreter_call",
    "mcp_call",
    "apply_patch_call",
    "shell_call",
    "local_shell_call",
  ] as const;
  for (const kind of calls) {
    Deno.test(
      `native responses usage: without the upstream's usage, a ${kind}'s text is counted as a message's is (${
        stream ? "stream" : "JSON"
      })`,
      async () => {
        const call = await recordOf(kind, stream);
        // A message streamed in the same pieces: the tokenizer counts each piece on its own.
        const message = await recordOf("message", stream, pieces(kind));
        assert.equal(call.tokens_estimated, true);
        assert.equal(message.tokens_estimated, true);
        assert(message.completion_tokens > 10, JSON.stringify(message));
        assert.equal(call.completion_tokens, message.completion_tokens, JSON.stringify(call));
      },
    );
  }
}
