/**
 * Custom tools (`{type: "custom"}`: free-form or grammar-held text input; Codex sends `apply_patch` as one for
 * GPT-5-style models) through `POST /v1/responses` on a translated target. They are run by the client, so a
 * chat upstream is not a reason to go without them: the model sees each as a function with one string
 * parameter, its call comes back as a `custom_tool_call` item (streamed with
 * `response.custom_tool_call_input.delta` / `.done`), the next turn's `custom_tool_call` and
 * `custom_tool_call_output` items reach the model as the call and its result, and a `tool_choice` naming the
 * custom tool forces its call. A native target gets all of it as sent. Every Response and stream the `openai`
 * SDK receives is checked against OpenAI's published spec (`responses_conformance.ts`).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { ResponsesWire } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

const PATCH = '*** Begin Patch\n*** Update File: a.txt\n-old "line"\n+new line ☕\n*** End Patch';
const EXEC = {
  type: "function" as const,
  name: "exec_command",
  parameters: { type: "object", properties: { cmd: { type: "string" } } },
  strict: false,
};
const APPLY_PATCH = {
  type: "custom" as const,
  name: "apply_patch",
  description: "Use apply_patch to edit files.",
  format: {
    type: "grammar" as const,
    syntax: "lark" as const,
    definition: 'start: "*** Begin Patch" /(.|\\n)+/',
  },
};
const TOOLS = [EXEC, APPLY_PATCH];

/** A chat chunk as an SSE frame. */
function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  const body = {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The model calls apply_patch, its arguments streamed in fragments of a few characters. */
function patchCall(): RawStep {
  const args = JSON.stringify({ input: PATCH });
  const fragments: string[] = [];
  for (let i = 0; i < args.length; i += 9) fragments.push(args.slice(i, i + 9));
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      chunk({ role: "assistant", content: null }),
      chunk({
        tool_calls: [{
          index: 0,
          id: "call_1",
          type: "function",
          function: { name: "apply_patch", arguments: "" },
        }],
      }),
      ...fragments.map((f) => chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] })),
      chunk({}, "tool_calls"),
      "data: [DONE]\n\n",
    ],
  };
}

/** The same call, whole. */
const PATCH_CALL_JSON: RawStep = {
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify({
    id: "c1",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "call_1",
          type: "function",
          function: { name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) },
        }],
      },
      finish_reason: "tool_calls",
    }],
    usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
  })],
};

Deno.test("responses custom tools: a translated target's model sees and calls a custom tool, and reads its output", async (t) => {
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
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
  /** The body the upstream got last. */
  const sent = () => JSON.parse(raw.requests.at(-1)!.body) as Record<string, unknown>;
  try {
    await t.step(
      "the model gets the custom tool and its call streams back as a custom_tool_call",
      async () => {
        raw.next = patchCall();
        const { data, response } = await client.responses
          .create({ model: "chat-coder", input: "Edit a.txt.", tools: TOOLS, stream: true })
          .withResponse();
        assert.equal(response.headers.get("x-gateway-dropped"), null, "nothing is dropped");
        const types: string[] = [];
        let deltas = "";
        let final: OpenAI.Responses.Response | undefined;
        for await (const event of data) {
          types.push(event.type);
          if (event.type === "response.custom_tool_call_input.delta") deltas += event.delta;
          if (event.type === "response.completed") final = event.response;
        }
        const tools = sent().tools as { function: { name: string; description: string } }[];
        assert.deepEqual(tools.map((tool) => tool.function.name), ["exec_command", "apply_patch"]);
        assert.ok(
          tools[1].function.description.includes(APPLY_PATCH.format.definition),
          "the grammar is told",
        );
        assert.equal(deltas, PATCH);
        assert.ok(types.includes("response.custom_tool_call_input.done"));
        assert.ok(!types.some((type) => type.startsWith("response.function_call_arguments")));
        const item = final!.output[0];
        assert.ok(item.type === "custom_tool_call");
        assert.deepEqual([item.call_id, item.name, item.input], ["call_1", "apply_patch", PATCH]);
      },
    );

    await t.step("whole, too, and chained with previous_response_id", async () => {
      raw.next = PATCH_CALL_JSON;
      const whole = await client.responses.create({
        model: "chat-coder",
        input: "Edit a.txt.",
        tools: TOOLS,
      });
      const item = whole.output[0];
      assert.ok(item.type === "custom_tool_call");
      assert.equal(item.input, PATCH);
      await client.responses.create({
        model: "chat-coder",
        tools: TOOLS,
        previous_response_id: whole.id,
        input: [{ type: "custom_tool_call_output", call_id: "call_1", output: "Done!" }],
      });
      const messages = sent().messages as Record<string, unknown>[];
      assert.deepEqual(messages.slice(1).map((m) => [m.role, m.tool_calls ?? m.content]), [
        ["assistant", [{
          id: "call_1",
          type: "function",
          function: { name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) },
        }]],
        ["tool", "Done!"],
      ]);
    });

    await t.step("the call and its output in the next turn's input reach the model", async () => {
      raw.next = patchCall();
      await client.responses.create({
        model: "chat-coder",
        tools: TOOLS,
        input: [
          { type: "message", role: "user", content: "Edit a.txt." },
          { type: "custom_tool_call", call_id: "call_1", name: "apply_patch", input: PATCH },
          { type: "custom_tool_call_output", call_id: "call_1", output: "Done!" },
        ],
        stream: true,
      }).then(async (stream) => {
        for await (const _ of stream) { /* read to the end */ }
      });
      const messages = sent().messages as Record<string, unknown>[];
      assert.deepEqual(messages.slice(1), [
        {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "apply_patch", arguments: JSON.stringify({ input: PATCH }) },
          }],
        },
        { role: "tool", tool_call_id: "call_1", content: "Done!" },
      ]);
    });

    await t.step("a tool_choice naming the custom tool forces its call", async () => {
      raw.next = PATCH_CALL_JSON;
      const { response } = await client.responses.create({
        model: "chat-coder",
        input: "Edit a.txt.",
        tools: TOOLS,
        tool_choice: { type: "custom", name: "apply_patch" },
      }).withResponse();
      assert.equal(response.headers.get("x-gateway-dropped"), null);
      assert.deepEqual(sent().tool_choice, { type: "function", function: { name: "apply_patch" } });
    });

    assert.deepEqual(await wire.check(), { responses: 3, streams: 2 });

    await t.step("a native target gets the custom tool, its choice and its items as sent", async () => {
      raw.next = {
        status: 200,
        headers: { "content-type": "application/json" },
        chunks: [JSON.stringify({
          id: "resp_up",
          object: "response",
          created_at: 1,
          status: "completed",
          model: "gpt-x",
          output: [],
          usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
        })],
      };
      const input = [
        { type: "message" as const, role: "user" as const, content: "Edit a.txt." },
        { type: "custom_tool_call" as const, call_id: "call_1", name: "apply_patch", input: PATCH },
        { type: "custom_tool_call_output" as const, call_id: "call_1", output: "Done!" },
      ];
      const choice = { type: "custom" as const, name: "apply_patch" };
      // The upstream's answer is a stub: not the client's to check.
      const plain = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0 });
      await plain.responses.create({ model: "chat-native", input, tools: TOOLS, tool_choice: choice });
      assert.equal(raw.requests.at(-1)!.path, "/native/v1/responses");
      const body = sent();
      assert.deepEqual([body.tools, body.tool_choice, body.input], [TOOLS, choice, input]);
    });
  } finally {
    await gw.stop();
    await raw.stop();
  }
});
