/**
 * Which tools a translated target's model may call, through the `openai` SDK: an `allowed_tools` tool choice
 * reaches the chat upstream as the allowed tools alone and its mode as `tool_choice` (so a `required` choice
 * still forces a call of one of them, and a ruled-out tool cannot be called); a custom tool inside a namespace
 * tool reaches it by its flat name, and its call comes back as a `custom_tool_call` with its namespace. Every
 * Response and stream the SDK receives is checked against OpenAI's published spec.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { ResponsesWire } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

/** The chat upstream calls `name` with `args`, whole. */
function callOf(name: string, args: string): RawStep {
  return {
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
          tool_calls: [{ id: "call_1", type: "function", function: { name, arguments: args } }],
        },
        finish_reason: "tool_calls",
      }],
      usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 },
    })],
  };
}

const WEATHER = { type: "function" as const, name: "get_weather", parameters: {}, strict: false };
const DELETE = { type: "function" as const, name: "delete_all", parameters: {}, strict: false };

Deno.test("responses tool scope: allowed_tools reaches a translated target as the allowed tools and the mode", async (t) => {
  const raw = startRawUpstream();
  const gw = await startGateway(`
providers:
  chat: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
models:
  chat-s: { type: chat, targets: [ { provider: chat, model: m } ] }
${TEST_TOKENS_YAML}`);
  const wire = new ResponsesWire(schemas);
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
  const sent = () => JSON.parse(raw.requests.at(-1)!.body) as Record<string, unknown>;
  const names = () => (sent().tools as { function: { name: string } }[]).map((tool) => tool.function.name);
  try {
    await t.step("required: only the allowed tools, and a call is forced", async () => {
      raw.next = callOf("get_weather", "{}");
      const choice = {
        type: "allowed_tools" as const,
        mode: "required" as const,
        tools: [{ type: "function", name: "get_weather" }],
      };
      const { data, response } = await client.responses.create({
        model: "chat-s",
        input: "Weather?",
        tools: [WEATHER, DELETE],
        tool_choice: choice,
      }).withResponse();
      assert.equal(response.headers.get("x-gateway-dropped"), null);
      assert.deepEqual(names(), ["get_weather"]);
      assert.equal(sent().tool_choice, "required");
      assert.deepEqual(data.tool_choice, choice, "echoed as sent");
      assert.deepEqual(data.tools.map((tool) => (tool as { name: string }).name), [
        "get_weather",
        "delete_all",
      ]);
      assert.equal(data.output[0].type, "function_call");
    });

    await t.step("auto: only the allowed tools, the model may answer in text", async () => {
      raw.next = callOf("delete_all", "{}");
      await client.responses.create({
        model: "chat-s",
        input: "Clean up?",
        tools: [WEATHER, DELETE],
        tool_choice: {
          type: "allowed_tools",
          mode: "auto",
          tools: [{ type: "function", name: "delete_all" }],
        },
      });
      assert.deepEqual(names(), ["delete_all"]);
      assert.equal(sent().tool_choice, "auto");
    });

    await t.step(
      "an allowed built-in tool is dropped and named; nothing left to force is a 400",
      async () => {
        raw.next = callOf("get_weather", "{}");
        const { response } = await client.responses.create({
          model: "chat-s",
          input: "Search?",
          tools: [WEATHER, { type: "web_search" }],
          tool_choice: {
            type: "allowed_tools",
            mode: "required",
            tools: [{ type: "web_search" }, { type: "function", name: "get_weather" }],
          },
        }).withResponse();
        assert.equal(response.headers.get("x-gateway-dropped"), "tools[1],tool_choice.tools[0]");
        assert.deepEqual(names(), ["get_weather"]);
        assert.equal(sent().tool_choice, "required");
        const before = raw.requests.length;
        const err = await client.responses.create({
          model: "chat-s",
          input: "Search?",
          tools: [WEATHER, { type: "web_search" }],
          tool_choice: { type: "allowed_tools", mode: "required", tools: [{ type: "web_search" }] },
        }).catch((e: unknown) => e);
        assert.ok(err instanceof OpenAI.BadRequestError, String(err));
        assert.equal(err.param, "tool_choice");
        assert.equal(raw.requests.length, before, "no upstream is asked");
      },
    );

    assert.deepEqual(await wire.check(), { responses: 3, streams: 0 });
  } finally {
    await gw.stop();
    await raw.stop();
  }
});

/** The chat upstream streams a call of `name`, its arguments in fragments of a few characters. */
function streamedCall(name: string, args: string): RawStep {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${
      JSON.stringify({
        id: "c1",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta, finish_reason: finish }],
      })
    }\n\n`;
  const fragments: string[] = [];
  for (let i = 0; i < args.length; i += 7) fragments.push(args.slice(i, i + 7));
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      chunk({ role: "assistant", content: null }),
      chunk({
        tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name, arguments: "" } }],
      }),
      ...fragments.map((f) => chunk({ tool_calls: [{ index: 0, function: { arguments: f } }] })),
      chunk({}, "tool_calls"),
      "data: [DONE]\n\n",
    ],
  };
}

const PATCH = "*** Begin Patch\n*** End Patch";
const FS = {
  type: "namespace",
  name: "fs",
  description: "Files.",
  tools: [
    { type: "function", name: "read", parameters: {} },
    { type: "custom", name: "apply_patch", description: "Apply a patch." },
  ],
};

Deno.test("responses tool scope: a custom tool inside a namespace reaches a translated target and its call comes back", async (t) => {
  const raw = startRawUpstream();
  const gw = await startGateway(`
providers:
  chat: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
models:
  chat-s: { type: chat, targets: [ { provider: chat, model: m } ] }
${TEST_TOKENS_YAML}`);
  const wire = new ResponsesWire(schemas);
  const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
  const sent = () => JSON.parse(raw.requests.at(-1)!.body) as Record<string, unknown>;
  const names = () => (sent().tools as { function: { name: string } }[]).map((tool) => tool.function.name);
  // The SDK's types have no namespace tool yet: sent as the spec has it.
  const tools = [FS] as unknown as OpenAI.Responses.Tool[];
  try {
    await t.step("whole", async () => {
      raw.next = callOf("fs__apply_patch", JSON.stringify({ input: PATCH }));
      const { data, response } = await client.responses.create({ model: "chat-s", input: "Patch it.", tools })
        .withResponse();
      assert.equal(response.headers.get("x-gateway-dropped"), null, "nothing is dropped");
      assert.deepEqual(names(), ["fs__read", "fs__apply_patch"]);
      assert.deepEqual(data.output[0], {
        id: data.output[0].id,
        type: "custom_tool_call",
        status: "completed",
        call_id: "call_1",
        name: "apply_patch",
        input: PATCH,
        namespace: "fs",
      });
    });

    await t.step("streamed", async () => {
      raw.next = streamedCall("fs__apply_patch", JSON.stringify({ input: PATCH }));
      const stream = await client.responses.create({
        model: "chat-s",
        input: "Patch it.",
        tools,
        stream: true,
      });
      let deltas = "";
      let final: OpenAI.Responses.Response | undefined;
      for await (const event of stream) {
        if (event.type === "response.custom_tool_call_input.delta") deltas += event.delta;
        if (event.type === "response.completed") final = event.response;
      }
      assert.equal(deltas, PATCH);
      const item = final!.output[0];
      assert.ok(item.type === "custom_tool_call");
      assert.deepEqual([item.name, item.namespace, item.input], ["apply_patch", "fs", PATCH]);
    });

    await t.step("allowed by name and namespace", async () => {
      raw.next = callOf("fs__apply_patch", JSON.stringify({ input: PATCH }));
      await client.responses.create({
        model: "chat-s",
        input: "Patch it.",
        tools,
        tool_choice: {
          type: "allowed_tools",
          mode: "required",
          tools: [{ type: "custom", name: "apply_patch", namespace: "fs" }],
        },
      });
      assert.deepEqual(names(), ["fs__apply_patch"]);
      assert.equal(sent().tool_choice, "required");
    });

    assert.deepEqual(await wire.check(), { responses: 2, streams: 1 });
  } finally {
    await gw.stop();
    await raw.stop();
  }
});
