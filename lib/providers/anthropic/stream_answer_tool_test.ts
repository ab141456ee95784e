/** Anthropic stream → OpenAI chunks for a `response_format` answer, sent as the forced answer tool. */
import assert from "node:assert/strict";
import type { JsonObject } from "../../openai/types.ts";
import { collect, encoder, sse } from "./stream_test_helpers.ts";

/** A `response_format` answer: the forced answer tool's input streamed as JSON fragments. */
const ANSWER_STREAM = [
  sse(
    "message_start",
    '{"type":"message_start","message":{"id":"msg_j","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":1}}}',
  ),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_j","name":"json_response","input":{}}}',
  ),
  ...["", '{"greeting":', ' "¡Hola', ', 世界 🌍"}'].map((p) =>
    sse(
      "content_block_delta",
      JSON.stringify({
        type: "content_block_delta",
        index: 0,
        delta: { type: "input_json_delta", partial_json: p },
      }),
    )
  ),
  sse("content_block_stop", '{"type":"content_block_stop","index":0}'),
  sse(
    "message_delta",
    '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":12}}',
  ),
  sse("message_stop", '{"type":"message_stop"}'),
].join("");

Deno.test("anthropic stream: the answer tool's input → content as it arrives, finish stop, at every byte offset", async () => {
  const bytes = encoder.encode(ANSWER_STREAM);
  const whole = await collect([bytes]);
  const deltas = whole.map((c) => c.choices[0]?.delta as JsonObject | undefined);
  assert.deepEqual(deltas.slice(1, 4), [
    { content: '{"greeting":' },
    { content: ' "¡Hola' },
    { content: ', 世界 🌍"}' },
  ]);
  assert.ok(deltas.every((d) => d === undefined || !("tool_calls" in d)), "no tool call reaches the client");
  const text = deltas.map((d) => (typeof d?.content === "string" ? d.content : "")).join("");
  assert.deepEqual(JSON.parse(text), { greeting: "¡Hola, 世界 🌍" });
  assert.equal(whole.at(-2)!.choices[0].finish_reason, "stop");
  for (let cut = 0; cut <= bytes.length; cut++) {
    const chunks = await collect([bytes.subarray(0, cut), bytes.subarray(cut)]);
    assert.deepEqual(chunks, whole, `split at byte ${cut}`);
  }
});

Deno.test("anthropic stream: an answer beside a client tool call finishes tool_calls; an empty answer is {}", async () => {
  const text = ANSWER_STREAM.replace(/event: content_block_delta\n[^\n]*\n\n/g, "").replace(
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' +
      sse(
        "content_block_start",
        '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_w","name":"get_weather","input":{}}}',
      ) + sse("content_block_stop", '{"type":"content_block_stop","index":1}'),
  );
  const chunks = await collect([encoder.encode(text)]);
  const deltas = chunks.map((c) => c.choices[0]?.delta as JsonObject | undefined);
  assert.deepEqual(deltas[1], { content: "{}" });
  assert.deepEqual(deltas[2], {
    tool_calls: [{
      index: 0,
      id: "toolu_w",
      type: "function",
      function: { name: "get_weather", arguments: "" },
    }],
  });
  assert.equal(chunks.at(-2)!.choices[0].finish_reason, "tool_calls");
});
