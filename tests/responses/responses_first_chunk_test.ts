/**
 * An OpenAI-compatible chat upstream whose first chunk already carries the answer (Ollama and OpenRouter send
 * no role-only chunk first; a tool call or `reasoning_content` may come whole in it), streamed through
 * `POST /v1/responses` to the official `openai` SDK's `responses.stream()`. `response.created` and
 * `response.in_progress` list no output, as OpenAI's do, so each item is announced once, by its
 * `output_item.added`; a snapshot that already listed it made the SDK throw "Duplicate response output index
 * 0.". Every stream is checked against OpenAI's published spec and whole (`responses_conformance.ts`).
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { loadOpenApiSchemas } from "../helpers/openapi_schema.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import { ResponsesWire } from "../helpers/responses_conformance.ts";

const schemas = await loadOpenApiSchemas();

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

/** A stream of these chunks, then the end. */
function stream(...chunks: string[]): RawStep {
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [...chunks, "data: [DONE]\n\n"],
  };
}

const CALL = { index: 0, id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } };

const CASES: { name: string; step: RawStep; output: string[] }[] = [
  {
    name: "role and text in the first chunk (Ollama)",
    step: stream(
      chunk({ role: "assistant", content: "Hello " }),
      chunk({ content: "world" }),
      chunk({}, "stop"),
    ),
    output: ["message"],
  },
  {
    name: "text without a role in the first chunk",
    step: stream(chunk({ content: "Hello world" }), chunk({}, "stop")),
    output: ["message"],
  },
  {
    name: "a whole tool call in the first chunk",
    step: stream(chunk({ role: "assistant", tool_calls: [CALL] }), chunk({}, "tool_calls")),
    output: ["function_call"],
  },
  {
    name: "reasoning in the first chunk",
    step: stream(
      chunk({ role: "assistant", reasoning_content: "Think." }),
      chunk({ content: "Hello world" }),
      chunk({}, "stop"),
    ),
    output: ["reasoning", "message"],
  },
];

Deno.test("responses first chunk: an upstream whose first chunk carries the answer streams to the SDK's responses.stream()", async (t) => {
  const raw = startRawUpstream();
  const gw = await startGateway(`
providers:
  raw: { type: openai, base_url: "${raw.url}/v1", api_key: "sk-raw" }
models:
  chat-raw: { type: chat, targets: [ { provider: raw, model: m } ] }
${TEST_TOKENS_YAML}`);
  try {
    const wire = new ResponsesWire(schemas);
    const client = new OpenAI({ apiKey: TEST_TOKEN, baseURL: gw.baseURL, maxRetries: 0, fetch: wire.fetch });
    for (const c of CASES) {
      await t.step(c.name, async () => {
        raw.next = c.step;
        const runner = client.responses.stream({ model: "chat-raw", input: "Hi" });
        const types: string[] = [];
        runner.on("event", (e) => types.push(e.type));
        const final = await runner.finalResponse();
        assert.equal(final.status, "completed");
        assert.deepEqual(final.output.map((i) => i.type), c.output);
        if (c.output.includes("message")) assert.equal(final.output_text, "Hello world");
        assert.deepEqual(types.slice(0, 3), [
          "response.created",
          "response.in_progress",
          "response.output_item.added",
        ]);
      });
    }
    assert.deepEqual(await wire.check(), { responses: 0, streams: CASES.length });
  } finally {
    await gw.stop();
    await raw.stop();
  }
});
