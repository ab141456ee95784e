import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { StreamTexts } from "../../usage/stream_texts.ts";
import { outputSaid, outputTexts, StreamOutputTexts } from "./output_texts.ts";

const DIFF = '@@ function main() {\n+  console.log("hi");\n }';

/** Every text a stream of `events` adds, in order. */
function streamed(events: readonly JsonObject[]): string[] {
  const texts = new StreamOutputTexts();
  return events.flatMap((event) => texts.read(event));
}

Deno.test("own output count: what the model wrote in each output item of a whole Response", () => {
  assert.deepEqual(
    outputTexts({
      output: [
        { type: "message", content: [{ type: "output_text", text: "a" }, { type: "refusal", refusal: "b" }] },
        { type: "function_call", arguments: "{}" },
        { type: "custom_tool_call", input: "patch" },
        { type: "code_interpreter_call", code: "print(1)" },
        { type: "mcp_call", arguments: '{"q":1}' },
        { type: "mcp_approval_request", arguments: '{"q":2}' },
        { type: "program", code: "await tools.ls()", fingerprint: "fp" },
        { type: "web_search_call", action: { type: "search", query: "news", queries: ["news", "weather"] } },
        { type: "web_search_call", action: { type: "search", query: "old" } },
        { type: "web_search_call", action: { type: "open_page", url: "https://example.com" } },
        { type: "file_search_call", queries: ["q"], results: [{ text: "found" }] },
        {
          type: "reasoning",
          summary: [{ type: "summary_text", text: "s" }],
          content: [{ type: "reasoning_text", text: "r" }],
        },
      ],
    }),
    [
      "a",
      "b",
      "{}",
      "patch",
      "print(1)",
      '{"q":1}',
      '{"q":2}',
      "await tools.ls()",
      "news",
      "weather",
      "old",
      "q",
      "s",
      "r",
    ],
  );
});

Deno.test("own output count: an apply_patch call's diff, a shell call's commands, a local shell call's command", () => {
  assert.deepEqual(
    outputTexts({
      output: [
        {
          type: "apply_patch_call",
          id: "apc_1",
          call_id: "call_1",
          status: "completed",
          operation: { type: "update_file", path: "/src/main.ts", diff: DIFF },
        },
        { type: "apply_patch_call", operation: { type: "delete_file", path: "/old.ts" } },
        {
          type: "shell_call",
          call_id: "c1",
          action: { commands: ["ls -la", "cat README.md"], timeout_ms: null, max_output_length: null },
          status: "completed",
        },
        {
          type: "local_shell_call",
          call_id: "c2",
          action: { type: "exec", command: ["git", "status"], env: {} },
        },
      ],
    }),
    [DIFF, "ls -la", "cat README.md", "git", "status"],
  );
  // The same diff through Codex's custom apply_patch tool counts as much.
  assert.deepEqual(outputTexts({ output: [{ type: "custom_tool_call", input: DIFF }] }), [DIFF]);
});

Deno.test("own output count: a computer call's typed text, not its clicks and keys", () => {
  assert.deepEqual(
    outputTexts({
      output: [{
        type: "computer_call",
        action: { type: "type", text: "hello world" },
        actions: [{ type: "click", x: 1, y: 2, button: "left" }, { type: "keypress", keys: ["ENTER"] }, {
          type: "type",
          text: "more",
        }],
      }],
    }),
    ["hello world", "more"],
  );
});

Deno.test("own output count: an image, a tool list and tool outputs are no text the model wrote", () => {
  assert.deepEqual(
    outputTexts({
      output: [
        { type: "image_generation_call", status: "completed", result: "iVBORw0KGgo=" },
        { type: "mcp_list_tools", server_label: "fs", tools: [{ name: "ls" }] },
        { type: "shell_call_output", output: [{ stdout: "x", stderr: "" }] },
      ],
    }),
    [],
  );
  assert.deepEqual(
    streamed([{ type: "response.image_generation_call.partial_image", partial_image_b64: "iVBORw0KGgo=" }]),
    [],
  );
});

/**
 * Streams of one output item each, as OpenAI sends them: `added` (text empty), the deltas, `done` (text
 * whole), `response.completed` with the final Response.
 */
const STREAMS: Record<string, { events: JsonObject[]; final: JsonObject }> = {
  apply_patch_call: (() => {
    const item = (diff: string) => ({
      type: "apply_patch_call",
      id: "apc_1",
      call_id: "call_1",
      status: diff === "" ? "in_progress" : "completed",
      operation: { type: "update_file", path: "/src/main.ts", diff },
    });
    const delta = (d: string) => ({
      type: "response.apply_patch_call_operation_diff.delta",
      item_id: "apc_1",
      output_index: 0,
      delta: d,
    });
    return {
      events: [
        { type: "response.output_item.added", output_index: 0, item: item("") },
        delta(DIFF.slice(0, 10)),
        delta(DIFF.slice(10)),
        {
          type: "response.apply_patch_call_operation_diff.done",
          item_id: "apc_1",
          output_index: 0,
          diff: DIFF,
        },
        { type: "response.output_item.done", output_index: 0, item: item(DIFF) },
      ],
      final: item(DIFF),
    };
  })(),
  shell_call: (() => {
    const item = (commands: string[]) => ({
      type: "shell_call",
      id: "sh_1",
      call_id: "call_1",
      action: { commands, timeout_ms: null, max_output_length: null },
      status: "completed",
      environment: null,
    });
    // The shell command events name the item by its output_index only.
    return {
      events: [
        { type: "response.output_item.added", output_index: 0, item: item([]) },
        { type: "response.shell_call_command.added", output_index: 0, command_index: 0, command: "" },
        { type: "response.shell_call_command.delta", output_index: 0, command_index: 0, delta: "ls " },
        { type: "response.shell_call_command.delta", output_index: 0, command_index: 0, delta: "-la" },
        { type: "response.shell_call_command.done", output_index: 0, command_index: 0, command: "ls -la" },
        { type: "response.shell_call_command.added", output_index: 0, command_index: 1, command: "cat" },
        { type: "response.shell_call_command.delta", output_index: 0, command_index: 1, delta: " README.md" },
        {
          type: "response.shell_call_command.done",
          output_index: 0,
          command_index: 1,
          command: "cat README.md",
        },
        { type: "response.output_item.done", output_index: 0, item: item(["ls -la", "cat README.md"]) },
      ],
      final: item(["ls -la", "cat README.md"]),
    };
  })(),
  local_shell_call: (() => {
    // No event streams a local shell call's command: the item arrives whole.
    const item = {
      type: "local_shell_call",
      id: "lsh_1",
      call_id: "call_1",
      action: { type: "exec", command: ["git", "status"], env: {} },
      status: "completed",
    };
    return {
      events: [
        { type: "response.output_item.added", output_index: 0, item },
        { type: "response.output_item.done", output_index: 0, item },
      ],
      final: item,
    };
  })(),
  function_call: (() => {
    const item = (args: string) => ({
      type: "function_call",
      id: "fc_1",
      call_id: "c",
      name: "f",
      arguments: args,
    });
    return {
      events: [
        { type: "response.output_item.added", output_index: 0, item: item("") },
        { type: "response.function_call_arguments.delta", item_id: "fc_1", output_index: 0, delta: '{"a":' },
        { type: "response.function_call_arguments.delta", item_id: "fc_1", output_index: 0, delta: "1}" },
        { type: "response.output_item.done", output_index: 0, item: item('{"a":1}') },
      ],
      final: item('{"a":1}'),
    };
  })(),
  mcp_approval_request: (() => {
    const item = {
      type: "mcp_approval_request",
      id: "mcpr_1",
      server_label: "fs",
      name: "rm",
      arguments: "{}",
    };
    return {
      events: [
        { type: "response.output_item.added", output_index: 0, item },
        { type: "response.output_item.done", output_index: 0, item },
      ],
      final: item,
    };
  })(),
  web_search_call: (() => {
    const item = (queries: string[]) => ({
      type: "web_search_call",
      id: "ws_1",
      status: "completed",
      action: { type: "search", queries, sources: [{ type: "url", url: "https://example.com" }] },
    });
    return {
      events: [
        { type: "response.output_item.added", output_index: 0, item: item([]) },
        { type: "response.web_search_call.searching", item_id: "ws_1", output_index: 0 },
        { type: "response.output_item.done", output_index: 0, item: item(["gateway news"]) },
      ],
      final: item(["gateway news"]),
    };
  })(),
  computer_call: (() => {
    const item = {
      type: "computer_call",
      id: "cu_1",
      action: { type: "type", text: "hello" },
      status: "completed",
    };
    return {
      events: [{ type: "response.output_item.done", output_index: 0, item }],
      final: item,
    };
  })(),
};

for (const [kind, { events, final }] of Object.entries(STREAMS)) {
  Deno.test(`own output count: a streamed ${kind} counts what the same Response counts whole`, () => {
    const whole = outputTexts({ output: [final] });
    assert.notDeepEqual(whole, []);
    assert.equal(streamed(events).join(""), whole.join(""));
  });
}

Deno.test("own output count: the apply_patch diff delta and the shell command delta are counted text", () => {
  assert.deepEqual(
    streamed([{
      type: "response.apply_patch_call_operation_diff.delta",
      item_id: "apc_1",
      output_index: 0,
      delta: DIFF,
    }]),
    [DIFF],
  );
  assert.deepEqual(
    streamed([{ type: "response.shell_call_command.delta", output_index: 1, command_index: 0, delta: "ls" }]),
    ["ls"],
  );
  assert.deepEqual(streamed([{ type: "response.created", response: {} }]), []);
});

Deno.test("own output count: an item an upstream sends whole, without deltas, is counted once", () => {
  const call = { type: "function_call", id: "fc_1", call_id: "c", name: "f", arguments: '{"a":1}' };
  const message = {
    type: "message",
    id: "msg_1",
    content: [{ type: "output_text", text: "streamed" }],
  };
  assert.deepEqual(
    streamed([
      {
        type: "response.output_text.delta",
        item_id: "msg_1",
        output_index: 0,
        content_index: 0,
        delta: "streamed",
      },
      { type: "response.output_item.done", output_index: 0, item: message },
      { type: "response.output_item.done", output_index: 1, item: call },
    ]),
    ["streamed", '{"a":1}'],
  );
});

Deno.test("own output count: a stream's reasoning, by delta or by a whole reasoning item, is pushed as reasoning", () => {
  const texts: string[] = [];
  const reasoning: string[] = [];
  const out = {
    push: (text: string) => texts.push(text),
    pushReasoning: (text: string) => reasoning.push(text),
  };
  const written = new StreamOutputTexts();
  written.push({
    type: "response.reasoning_summary_text.delta",
    output_index: 0,
    item_id: "rs_1",
    delta: "think",
  }, out);
  written.push(
    { type: "response.output_text.delta", output_index: 1, item_id: "msg_1", delta: "answer" },
    out,
  );
  // A reasoning item no delta streamed arrives whole: its summary is reasoning too.
  written.push({
    type: "response.output_item.done",
    output_index: 2,
    item: { id: "rs_2", type: "reasoning", summary: [{ type: "summary_text", text: "more" }] },
  }, out);
  assert.deepEqual({ texts, reasoning }, { texts: ["answer"], reasoning: ["think", "more"] });
});

Deno.test("content capture: a Response's reasoning apart from its answer, whole or streamed alike", () => {
  const reasoning = {
    id: "rs_1",
    type: "reasoning",
    summary: [{ type: "summary_text", text: "s" }],
    content: [{ type: "reasoning_text", text: "r" }],
  };
  const message = {
    id: "msg_1",
    type: "message",
    content: [{ type: "output_text", text: "a" }, { type: "refusal", refusal: "b" }],
  };
  const call = { id: "fc_1", type: "function_call", arguments: "{}" };
  const response = { output: [reasoning, message, call] };
  assert.deepEqual(outputSaid(response), { text: ["a", "b", "{}"], reasoning: ["s", "r"] });
  assert.deepEqual(outputTexts(response), ["s", "r", "a", "b", "{}"], "counted all the same");

  const at = (output_index: number, item_id: string) => ({ output_index, item_id });
  const deltas = [
    { type: "response.reasoning_summary_text.delta", ...at(0, "rs_1"), delta: "s" },
    { type: "response.reasoning_text.delta", ...at(0, "rs_1"), delta: "r" },
    { type: "response.output_item.done", output_index: 0, item: reasoning },
    { type: "response.output_text.delta", ...at(1, "msg_1"), delta: "a" },
    { type: "response.refusal.delta", ...at(1, "msg_1"), delta: "b" },
    { type: "response.output_item.done", output_index: 1, item: message },
    { type: "response.function_call_arguments.delta", ...at(2, "fc_1"), delta: "{}" },
    { type: "response.output_item.done", output_index: 2, item: call },
    { type: "response.created" },
  ];
  // Reasoning no delta streamed comes whole from its output_item.done, and is reasoning all the same.
  const whole = [{ type: "response.output_item.done", output_index: 0, item: reasoning }, ...deltas.slice(3)];
  for (const events of [deltas, whole]) {
    const texts = new StreamTexts();
    const written = new StreamOutputTexts();
    for (const event of events) written.push(event, texts);
    assert.deepEqual(texts.said(), outputSaid(response));
    assert.equal(texts.reasoningChars, 2, "the budget weighs the same texts as reasoning");
  }
});

Deno.test("own output count: a stream keeps few and short item ids, whatever the upstream names", () => {
  const written = new StreamOutputTexts();
  const texts: string[] = [];
  const out = { push: (text: string) => texts.push(text) };
  // A delta naming a kilobyte-long id is not kept by its id, and ids past the cap are not kept at all: the item
  // that arrives whole is then counted whole (more, never less), and nothing grows with the stream.
  written.push({ type: "response.output_text.delta", item_id: "m".repeat(2_000), delta: "a" }, out);
  written.push({ type: "response.output_item.done", item: { id: "m".repeat(2_000), ...message("a") } }, out);
  for (let i = 0; i < 5_000; i++) {
    written.push({ type: "response.output_text.delta", item_id: `msg_${i}`, delta: "" }, out);
  }
  written.push({ type: "response.output_item.done", item: { id: "msg_4999", ...message("z") } }, out);
  // Under the cap an id keeps an item from being counted twice.
  written.push({ type: "response.output_item.done", item: { id: "msg_3", ...message("y") } }, out);
  assert.deepEqual(texts.filter((t) => t !== ""), ["a", "a", "z"]);
});

function message(text: string): JsonObject {
  return { type: "message", content: [{ type: "output_text", text }] };
}
