/**
 * A stored response whose tool call the model never finished (a `function_call` with status `incomplete`, its
 * arguments cut off by a failed stream) chains with `previous_response_id` on every target alike: the call, and
 * an output the client sends for it anyway, are left out of the rebuilt conversation and named in
 * `x-gateway-dropped`, rather than a chat target getting an assistant `tool_calls` entry with broken arguments and
 * no result, and a Claude target a 400 "not valid JSON". Over real sockets: the cut stream from a raw upstream,
 * the chained turns on the fake OpenAI chat upstream and the fake Anthropic one.
 */
import assert from "node:assert/strict";
import { FAKE_KEY, startFakeOpenAI } from "../helpers/fake_openai.ts";
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from "../helpers/fake_anthropic.ts";
import { dataEvents, startRawUpstream } from "../helpers/raw_upstream.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";

type Json = Record<string, unknown>;

const headers = { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" };
const tools = [{
  type: "function",
  name: "get_weather",
  parameters: { type: "object", properties: { city: { type: "string" } } },
}];

/** A chat completion chunk of a `get_weather` call, its arguments cut off after `{"city": "Par`. */
const cutCall = [
  {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{
      index: 0,
      delta: {
        role: "assistant",
        tool_calls: [{
          index: 0,
          id: "call_cut",
          type: "function",
          function: { name: "get_weather", arguments: "" },
        }],
      },
      finish_reason: null,
    }],
  },
  {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{
      index: 0,
      delta: { tool_calls: [{ index: 0, function: { arguments: '{"city": "Par' } }] },
      finish_reason: null,
    }],
  },
];

Deno.test("responses: a stored call the model never finished is left out of a chained conversation and named, on a chat and a Claude target", async () => {
  const raw = startRawUpstream();
  const chat = startFakeOpenAI();
  const claude = startFakeAnthropic();
  const gw = await startGateway(`
server: { host: 127.0.0.1, port: 0 }
providers:
  raw: { type: openai, base_url: "${raw.url}/v1", api_key: "${FAKE_KEY}" }
  chat: { type: openai, base_url: "${chat.baseURL}", api_key: "${FAKE_KEY}" }
  ant: { type: anthropic, base_url: "${claude.baseURL}", api_key: "${FAKE_ANTHROPIC_KEY}" }
models:
  chat-cut: { type: chat, targets: [ { provider: raw, model: gpt-cut, retries: 0 } ] }
  chat-ok: { type: chat, targets: [ { provider: chat, model: gpt-ok } ] }
  claude-ok: { type: chat, targets: [ { provider: ant, model: claude-ok } ] }
${TEST_TOKENS_YAML}`);
  try {
    // The stream is torn down mid-arguments: the call is stored incomplete, as the client received it.
    raw.next = {
      status: 200,
      headers: { "content-type": "text/event-stream" },
      chunks: [dataEvents(cutCall), "data: "],
      reset: "after-first-chunk",
    };
    const cut = await fetch(`${gw.baseURL}/responses`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "chat-cut", input: "Weather in Paris?", tools, stream: true }),
    });
    const events = (await cut.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) =>
      JSON.parse(l.slice(6)) as Json
    );
    const failed = events.at(-1)!.response as Json;
    assert.equal(failed.status, "failed");
    const call = (failed.output as Json[])[0];
    assert.deepEqual([call.type, call.status, call.arguments], [
      "function_call",
      "incomplete",
      '{"city": "Par',
    ]);

    const turns: [string, Json[] | string, () => unknown][] = [
      ["chat-ok", "Go on.", () => chat.requests.at(-1)!.body.messages],
      // An output the client sends for the cut call anyway goes too: a result for a call no target sees.
      [
        "claude-ok",
        [{ type: "function_call_output", call_id: "call_cut", output: "sunny" }, {
          role: "user",
          content: "Go on.",
        }],
        () => claude.requests.at(-1)!.body.messages,
      ],
    ];
    for (const [model, input, sent] of turns) {
      const next = await fetch(`${gw.baseURL}/responses`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, input, tools, previous_response_id: failed.id }),
      });
      const body = await next.json();
      assert.equal(next.status, 200, `${model}: ${JSON.stringify(body)}`);
      assert.equal(body.status, "completed", model);
      const upstream = JSON.stringify(sent());
      assert.ok(
        upstream.includes("Weather in Paris?") && upstream.includes("Go on."),
        `${model}: ${upstream}`,
      );
      assert.ok(!upstream.includes("call_cut") && !upstream.includes('Par\\"'), `${model}: ${upstream}`);
      const named = Array.isArray(input)
        ? `previous_response_id:${call.id},input[0]`
        : `previous_response_id:${call.id}`;
      assert.equal(next.headers.get("x-gateway-dropped"), named, model);
    }
  } finally {
    await gw.stop();
    await raw.stop();
    await chat.stop();
    await claude.stop();
  }
});
