/**
 * The `additional_tools` input item through `POST /v1/responses`: Codex 0.171 sends its tools in it, not in
 * `tools`, for its code-mode models (gpt-5.6-*, gpt-6*, its top-ranked model): a `functions` namespace with the
 * `exec` custom tool and `wait`, and a `collaboration` namespace of sub-agent tools. On a translated target the
 * model is given those tools (`functions`' by their own names, another namespace's by flat names, a custom
 * tool as a function with one string `input`) and its calls come back as Codex declared them, streamed and
 * whole; the next turn's call and its output reach the model; a built-in tool in the item is dropped and named.
 * A native target gets the item as sent. Every Response and stream is checked against OpenAI's published spec.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { dataEvents, jsonStep, sseStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { parseSse, ResponsesWire } from "../helpers/responses_conformance.ts";
import { usageRows } from "../helpers/usage_rows.ts";

const schemas = await loadOpenApiSchemas();

/** What the model runs in Codex's `exec` tool (raw JavaScript, with quotes and a newline to survive JSON). */
const SCRIPT =
  'const r = await tools.exec_command({cmd: "printf hi > hello.txt"});\ntext(JSON.stringify(r));';
const GRAMMAR = "start: pragma_source | plain_source\nplain_source: SOURCE\nSOURCE: /[\\s\\S]+/";

/** The item as Codex 0.171 sends it (its descriptions and schemas cut short). */
const ITEM = {
  type: "additional_tools",
  id: "at_01a23013",
  role: "developer",
  tools: [
    {
      type: "namespace",
      name: "functions",
      description: "",
      tools: [
        {
          type: "custom",
          name: "exec",
          description: "Run JavaScript code to orchestrate/compose tool calls",
          format: { type: "grammar", syntax: "lark", definition: GRAMMAR },
        },
        {
          type: "function",
          name: "wait",
          description: "Waits on a yielded `exec` cell.",
          strict: false,
          parameters: {
            type: "object",
            properties: { cell_id: { type: "string" } },
            required: ["cell_id"],
            additionalProperties: false,
          },
        },
      ],
    },
    {
      type: "namespace",
      name: "collaboration",
      description: "Tools in the collaboration namespace.",
      tools: [{
        type: "function",
        name: "spawn_agent",
        strict: false,
        parameters: { type: "object", properties: { task: { type: "string" } } },
      }],
    },
  ],
};
const PROMPT = [
  { type: "message", role: "developer", content: [{ type: "input_text", text: "You are Codex." }] },
  { type: "message", role: "user", content: [{ type: "input_text", text: "Write hello.txt." }] },
];

/** A chat chunk. */
function chunk(delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}

/** The model calls `exec` (its chat name), the arguments streamed in fragments of a few characters. */
function execCallStream() {
  const args = JSON.stringify({ input: SCRIPT });
  const fragments: string[] = [];
  for (let i = 0; i < args.length; i += 7) fragments.push(args.slice(i, i + 7));
  return sseStep(dataEvents([
    chunk({ role: "assistant", content: null }),
    chunk({
      tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "exec", arguments: "" } }],
    }),
    ...fragments.map((f) => chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] })),
    chunk({}, "tool_calls"),
  ], true));
}

/** The model calls `exec` and a collaboration tool, whole. */
const TWO_CALLS = jsonStep({
  id: "c1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: null,
      tool_calls: [
        {
          id: "call_1",
          type: "function",
          function: { name: "exec", arguments: JSON.stringify({ input: SCRIPT }) },
        },
        {
          id: "call_2",
          type: "function",
          function: { name: "collaboration__spawn_agent", arguments: '{"task":"review"}' },
        },
      ],
    },
    finish_reason: "tool_calls",
  }],
  usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
});

Deno.test("responses additional_tools: a translated target's model is given Codex's code-mode tools and its calls come back as Codex declared them", async (t) => {
  const raw = startRawUpstream();
  const gw = await startGateway(`
providers:
  chat: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
  native: { type: openai, base_url: "${raw.url}/native/v1", api_key: "sk-raw", native_responses: true }
models:
  chat-coder: { type: chat, targets: [ { provider: chat, model: m } ] }
  chat-native: { type: chat, targets: [ { provider: native, model: gpt-x } ] }
${TEST_TOKENS_YAML}`);
  const wire = new ResponsesWire(schemas);
  const post = (body: unknown) =>
    wire.fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  /** The body the upstream got last. */
  const sent = () => JSON.parse(raw.requests.at(-1)!.body) as Record<string, unknown>;
  try {
    await t.step(
      "streamed: the model gets the tools, and its exec call is a custom_tool_call in `functions`",
      async () => {
        raw.next = execCallStream();
        const res = await post({
          model: "chat-coder",
          input: [ITEM, ...PROMPT],
          tool_choice: "auto",
          stream: true,
        });
        const text = await res.text();
        assert.equal(res.status, 200, text);
        assert.equal(res.headers.get("x-gateway-dropped"), null, "nothing is dropped");
        const body = sent();
        const tools = body.tools as {
          function: { name: string; description: string; parameters: unknown };
        }[];
        assert.deepEqual(tools.map((tool) => tool.function.name), [
          "exec",
          "wait",
          "collaboration__spawn_agent",
        ]);
        assert.ok(tools[0].function.description.includes(GRAMMAR), "exec's grammar is told");
        assert.deepEqual(tools[1].function.parameters, ITEM.tools[0].tools[1].parameters);
        const messages = body.messages as { role: string; content: unknown }[];
        assert.deepEqual(messages.map((m) => [m.role, m.content]), [
          ["developer", "You are Codex."],
          ["user", [{ type: "text", text: "Write hello.txt." }]],
        ], "the item is no message");
        const events = parseSse(text);
        const input = events.filter((e) => e.type === "response.custom_tool_call_input.delta")
          .map((e) => e.delta).join("");
        assert.equal(input, SCRIPT);
        const done = events.find((e) => e.type === "response.output_item.done")!.item as Record<
          string,
          unknown
        >;
        assert.deepEqual(
          [done.type, done.call_id, done.name, done.namespace, done.input],
          ["custom_tool_call", "call_1", "exec", "functions", SCRIPT],
        );
        const final = events.find((e) => e.type === "response.completed")!.response as { output: unknown[] };
        assert.deepEqual(final.output, [done]);
      },
    );

    await t.step("whole: an exec call and a collaboration call, each with its namespace", async () => {
      raw.next = TWO_CALLS;
      const res = await post({ model: "chat-coder", input: [ITEM, ...PROMPT] });
      const response = await res.json();
      assert.equal(res.status, 200, JSON.stringify(response));
      const calls = (response.output as Record<string, unknown>[])
        .map((item) => [item.type, item.name, item.namespace, item.input ?? item.arguments]);
      assert.deepEqual(calls, [
        ["custom_tool_call", "exec", "functions", SCRIPT],
        ["function_call", "spawn_agent", "collaboration", '{"task":"review"}'],
      ]);
    });

    await t.step("the next turn's exec call and its output reach the model by the same name", async () => {
      raw.next = execCallStream();
      const res = await post({
        model: "chat-coder",
        input: [
          ITEM,
          ...PROMPT,
          {
            type: "custom_tool_call",
            call_id: "call_1",
            name: "exec",
            namespace: "functions",
            input: SCRIPT,
          },
          {
            type: "custom_tool_call_output",
            call_id: "call_1",
            output: [{ type: "input_text", text: "done" }],
          },
        ],
        stream: true,
      });
      assert.equal(res.status, 200, await res.text());
      const messages = sent().messages as Record<string, unknown>[];
      assert.deepEqual(messages.slice(2), [
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "exec", arguments: JSON.stringify({ input: SCRIPT }) },
          }],
        },
        { role: "tool", tool_call_id: "call_1", content: "done" },
      ]);
    });

    await t.step(
      "a built-in tool in the item is dropped and named, in the header and the usage record",
      async () => {
        raw.next = TWO_CALLS;
        const item = { ...ITEM, tools: [...ITEM.tools, { type: "web_search" }] };
        const res = await post({ model: "chat-coder", input: [item, ...PROMPT] });
        assert.equal(res.status, 200, await res.text());
        assert.equal(res.headers.get("x-gateway-dropped"), "input[0].tools[2]");
        const rows = await usageRows<{ dropped: string | null }>(gw, 4);
        assert.equal(rows.at(-1)!.dropped, "input[0].tools[2]");
      },
    );

    assert.deepEqual(await wire.check(), { responses: 2, streams: 2 });

    await t.step("a native target gets the item as sent", async () => {
      raw.next = jsonStep({
        id: "resp_up",
        object: "response",
        created_at: 1,
        status: "completed",
        model: "gpt-x",
        output: [],
        usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
      });
      const input = [ITEM, ...PROMPT];
      const res = await fetch(`${gw.baseURL}/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "chat-native", input, tool_choice: "auto" }),
      });
      assert.equal(res.status, 200, await res.text());
      assert.equal(raw.requests.at(-1)!.path, "/native/v1/responses");
      const body = sent();
      assert.deepEqual([body.input, body.tools], [input, undefined]);
    });
  } finally {
    await gw.stop();
    await raw.stop();
  }
});
