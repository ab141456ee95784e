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
import type { JsonObject } from "../../lib/openai/types.ts";
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { jsonStep, sseStep, typedEvents } from "../helpers/raw_upstream.ts";

const TEXT = "*** Begin Patch\n*** Update File: src/main.ts\n-const a = 1;\n+const a = 2;\n*** End Patch";

type Kind =
  | "message"
  | "message_whole"
  | "custom_tool_call"
  | "code_interpreter_call"
  | "mcp_call"
  | "apply_patch_call"
  | "shell_call"
  | "local_shell_call";

const message = (text: string) => ({
  type: "message",
  role: "assistant",
  content: [{ type: "output_text", text }],
});
const messageDelta = (text: string) => ({
  type: "response.output_text.delta",
  item_id: "item_1",
  content_index: 0,
  delta: text,
});

/**
 * The output item the upstream says {@linkcode TEXT} in, with the event that streams a piece of its text (none:
 * the item arrives whole) and whether it streams it whole, in one piece. The tokenizer counts each streamed
 * piece on its own, so a call is compared with a message streamed in the same pieces.
 */
const ITEMS: Record<
  Kind,
  { item: (text: string) => JsonObject; delta?: (text: string) => JsonObject; whole?: true }
> = {
  message: { item: message, delta: messageDelta },
  message_whole: { item: message, delta: messageDelta, whole: true },
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
    whole: true,
  },
};

/** A Responses upstream answering {@linkcode TEXT} as a kind, without any usage. */
const RESPONSES: OwnCountCase<Kind> = {
  provider: (url) =>
    `{ type: openai, base_url: "${url}/v1", api_key: sk-scripted-0123456789, native_responses: true }`,
  answer(kind, stream) {
    const item = (text: string) => ({ id: "item_1", ...ITEMS[kind].item(text) });
    const response = (output: unknown[], status: string) => ({
      id: "resp_u",
      object: "response",
      created_at: 1,
      model: "m",
      status,
      output,
    });
    if (!stream) return jsonStep(response([item(TEXT)], "completed"));
    const { delta, whole } = ITEMS[kind];
    const pieces = whole ? [TEXT] : [TEXT.slice(0, 20), TEXT.slice(20)];
    const deltas = delta === undefined
      ? []
      : pieces.map((text) => ({ type: "", ...delta(text), output_index: 0 }));
    const events = [
      { type: "response.created", response: response([], "in_progress") },
      { type: "response.output_item.added", output_index: 0, item: item(delta === undefined ? TEXT : "") },
      ...deltas,
      { type: "response.output_item.done", output_index: 0, item: item(TEXT) },
      { type: "response.completed", response: response([item(TEXT)], "completed") },
    ];
    return sseStep(typedEvents(events.map((e, i) => ({ ...e, sequence_number: i }))));
  },
  request: ({ stream, alias, token }) => ({
    path: "/v1/responses",
    headers: { authorization: `Bearer ${token}` },
    body: {
      model: alias,
      stream,
      store: false,
      tools: [{ type: "custom", name: "apply_patch" }],
      input: "patch",
    },
  }),
  shows: "End Patch",
};

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
      () => assertCountedAlike(RESPONSES, kind, ITEMS[kind].whole ? "message_whole" : "message", stream),
    );
  }
}
