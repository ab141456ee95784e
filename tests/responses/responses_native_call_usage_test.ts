/**
 * A native Responses target that reports no usage has its answer counted by the gateway (`tokens_estimated`):
 * what the model wrote in a call is output, counted as a message's text is, in a JSON answer and in a stream,
 * never left out as if the answer had said nothing: a custom (freeform) tool's call `input`
 * (`response.custom_tool_call_input.delta`), the `code` of a code interpreter call
 * (`response.code_interpreter_call_code.delta`) and an MCP call's `arguments` (`response.mcp_call_arguments.delta`).
 */
import { assertCountedAlike, type OwnCountCase } from "../helpers/own_count.ts";
import { jsonStep, sseStep, typedEvents } from "../helpers/raw_upstream.ts";

const TEXT = "*** Begin Patch\n*** Update File: src/main.ts\n-const a = 1;\n+const a = 2;\n*** End Patch";

/** The output item the upstream says {@linkcode TEXT} in, with the event that streams its text. */
const ITEMS = {
  message: {
    item: (text: string) => ({
      type: "message",
      role: "assistant",
      content: [{ type: "output_text", text }],
    }),
    delta: { type: "response.output_text.delta", content_index: 0 },
  },
  custom_tool_call: {
    item: (input: string) => ({ type: "custom_tool_call", call_id: "call_1", name: "apply_patch", input }),
    delta: { type: "response.custom_tool_call_input.delta" },
  },
  code_interpreter_call: {
    item: (code: string) => ({ type: "code_interpreter_call", container_id: "cntr_1", code, outputs: null }),
    delta: { type: "response.code_interpreter_call_code.delta" },
  },
  mcp_call: {
    item: (args: string) => ({
      type: "mcp_call",
      server_label: "fs",
      name: "patch",
      arguments: args,
      output: null,
    }),
    delta: { type: "response.mcp_call_arguments.delta" },
  },
};
type Kind = keyof typeof ITEMS;

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
    const delta = (text: string) => ({
      ...ITEMS[kind].delta,
      item_id: "item_1",
      output_index: 0,
      delta: text,
    });
    const events = [
      { type: "response.created", response: response([], "in_progress") },
      { type: "response.output_item.added", output_index: 0, item: item("") },
      delta(TEXT.slice(0, 20)),
      delta(TEXT.slice(20)),
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
  for (const kind of ["custom_tool_call", "code_interpreter_call", "mcp_call"] as const) {
    Deno.test(
      `native responses usage: without the upstream's usage, a ${kind}'s text is counted as a message's is (${
        stream ? "stream" : "JSON"
      })`,
      () => assertCountedAlike(RESPONSES, kind, "message", stream),
    );
  }
}
