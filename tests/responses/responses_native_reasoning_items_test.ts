/**
 * The reasoning items the gateway made, sent back to a native Responses target. A translated target's reasoning
 * reaches a Responses client as a `reasoning` item with its text as the summary and no `encrypted_content`;
 * Codex sends its output items back as its next input (`store: false`). A native target can only look such an
 * item up by its id among those it kept, and it never had the gateway's: OpenAI answers 404 "Item with id
 * 'rs_…' not found. Items are not persisted when `store` is set to false". So a conversation that moved from a
 * translated target to a native one (an alias's fallback, a switch of model) could not go on: the native target
 * now gets the input without them, and the answer names each in `x-gateway-dropped` and the usage record. Under
 * `store: false` nothing is kept upstream, so no reasoning item without encrypted content goes, whoever made it.
 */
import assert from "node:assert/strict";
import { TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import type { InProcessGateway } from "../helpers/in_process.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";
import {
  type FakeNativeUpstream,
  NATIVE_AFTER_TOOL,
  NATIVE_KEY,
  startFakeNativeResponses,
} from "../helpers/fake_openai_responses.ts";
import { json } from "../helpers/mixed_vendors.ts";
import { withInProcessGateway } from "../helpers/with_gateway.ts";

type Json = Record<string, unknown>;

const REASONING = "The user wants the weather: I should call get_weather.";
const TOOLS = [{
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } } },
}];

/** DeepSeek in thinking mode: its reasoning, then a tool call. */
const THINK_THEN_CALL: RawStep = json({
  id: "c1",
  object: "chat.completion",
  created: 1,
  model: "deepseek-reasoner",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: null,
      reasoning_content: REASONING,
      tool_calls: [{
        id: "call_0",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris"}' },
      }],
    },
    finish_reason: "tool_calls",
  }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
});
const DOWN: RawStep = {
  status: 500,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify({ error: { message: "overloaded", type: "server_error" } })],
};

interface Fakes {
  chat: ReturnType<typeof startRawUpstream>;
  native: FakeNativeUpstream;
}

function withGateway(fn: (gw: InProcessGateway, fakes: Fakes) => Promise<void>) {
  return withInProcessGateway(() => {
    const chat = startRawUpstream();
    chat.next = THINK_THEN_CALL;
    const native = startFakeNativeResponses();
    const config = `
providers:
  deepseek: { type: openai, base_url: "${chat.url}/v1", api_key: "sk-deepseek-key-abcdef0123456789" }
  openai: { type: openai, base_url: "${native.baseURL}", api_key: "${NATIVE_KEY}", native_responses: true }
models:
  chat-mixed:
    type: chat
    targets:
      - { provider: deepseek, model: deepseek-reasoner, retries: 0 }
      - { provider: openai, model: resp-ok, retries: 0 }
${TEST_TOKENS_YAML}`;
    return {
      fakes: { chat, native },
      config,
      stop: async () => {
        await chat.stop();
        await native.stop();
      },
    };
  }, fn);
}

async function responses(gw: InProcessGateway, body: Json, path = "/v1/responses"): Promise<Response> {
  return await gw.fetch(path, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-mixed", tools: TOOLS, ...body }),
  });
}

/**
 * Codex's first turn, answered by the translated target, and its next input: the output items sent back as
 * Codex sends them (a reasoning item's `content` and `encrypted_content` null), then the tool's output.
 */
async function firstTurn(gw: InProcessGateway, store: boolean): Promise<Json[]> {
  const ask = { type: "message", role: "user", content: [{ type: "input_text", text: "Weather in Paris?" }] };
  const response = await responses(gw, { store, include: ["reasoning.encrypted_content"], input: [ask] });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  const [reasoning, call] = body.output as Json[];
  assert.equal(reasoning.type, "reasoning");
  assert.deepEqual(reasoning.summary, [{ type: "summary_text", text: REASONING }]);
  return [
    ask,
    {
      type: "reasoning",
      id: reasoning.id,
      summary: reasoning.summary,
      content: null,
      encrypted_content: null,
    },
    { type: "function_call", name: call.name, arguments: call.arguments, call_id: call.call_id },
    { type: "function_call_output", call_id: call.call_id, output: "21 degrees" },
  ];
}

Deno.test("responses native reasoning items: the gateway's own are left out of a native target's input, and named", async () => {
  await withGateway(async (gw, fakes) => {
    for (const store of [false, true]) {
      fakes.chat.next = THINK_THEN_CALL;
      const input = await firstTurn(gw, store);
      // The translated target is down for the next turn: the alias falls back to the native one.
      fakes.chat.next = DOWN;
      const response = await responses(gw, { store, include: ["reasoning.encrypted_content"], input });
      const body = await response.json();
      assert.equal(response.status, 200, `store: ${store}: ${JSON.stringify(body)}`);
      assert.equal(body.output.at(-1).content[0].text, NATIVE_AFTER_TOOL);
      const sent = fakes.native.requests.at(-1)!.body.input as Json[];
      assert.deepEqual(
        sent,
        [input[0], input[2], input[3]],
        "the call and its output, without the gateway's item",
      );
      assert.equal(response.headers.get("x-gateway-dropped"), "input[1]");
      assert.equal(gw.records.at(-1)?.dropped, "input[1]");
    }
  });
});

Deno.test("responses native reasoning items: under store false, none without encrypted content goes", async () => {
  await withGateway(async (gw, fakes) => {
    // An item as the gateway made them before its ids were told apart: still unreadable upstream.
    const input = await firstTurn(gw, false);
    input[1] = { ...input[1], id: "rs_e252e6cf82e80a4a46d8569200afd66ccfe52bf9a895229f" };
    fakes.chat.next = DOWN;
    const response = await responses(gw, { store: false, include: ["reasoning.encrypted_content"], input });
    const body = await response.json();
    assert.equal(response.status, 200, JSON.stringify(body));
    assert.deepEqual(fakes.native.requests.at(-1)!.body.input, [input[0], input[2], input[3]]);
    assert.equal(response.headers.get("x-gateway-dropped"), "input[1]");
  });
});

Deno.test("responses native reasoning items: a translated target still reads them", async () => {
  await withGateway(async (gw, fakes) => {
    const input = await firstTurn(gw, false);
    // The translated target up again: the reasoning goes back as the tool-calling turn's reasoning_content.
    const response = await responses(gw, { store: false, input });
    await response.body?.cancel();
    assert.equal(response.status, 200);
    const sent = JSON.parse(fakes.chat.requests.at(-1)!.body);
    assert.equal(sent.messages.find((m: Json) => m.role === "assistant").reasoning_content, REASONING);
    assert.equal(response.headers.get("x-gateway-dropped"), null, "nothing left out");
  });
});
