/**
 * Anthropic stream → OpenAI chunks. The main fixture is the "streaming request with tool use" response of
 * Anthropic's streaming guide (platform.claude.com/docs/en/build-with-claude/streaming), verbatim; it is fed
 * whole, split at every byte offset, with CRLF and CR line ends, and one byte at a time, and must always give
 * the same chunks.
 */
import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import { sseParseTransformer } from "../../sse/parse.ts";
import { anthropicChunkTransformer } from "./stream.ts";
import { runStages } from "../../../tests/helpers/run_stages.ts";
import type { ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import { collect, encoder, source, sse, translate } from "./stream_test_helpers.ts";

/** Streaming guide, "Streaming request with tool use", response (verbatim). */
const TOOL_STREAM = [
  sse(
    "message_start",
    '{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-opus-4-6","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}',
  ),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
  ),
  sse("ping", '{"type": "ping"}'),
  ...["Okay", ",", " let", "'s", " check", " the", " weather", " for", " San", " Francisco", ",", " CA", ":"]
    .map((
      t,
    ) =>
      sse(
        "content_block_delta",
        JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: t } }),
      )
    ),
  sse("content_block_stop", '{"type":"content_block_stop","index":0}'),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}',
  ),
  ...["", '{"location":', ' "San', " Francisc", "o,", ' CA"', ",", ' "unit": "fah', 'renheit"}'].map((p) =>
    sse(
      "content_block_delta",
      JSON.stringify({
        type: "content_block_delta",
        index: 1,
        delta: { type: "input_json_delta", partial_json: p },
      }),
    )
  ),
  sse("content_block_stop", '{"type":"content_block_stop","index":1}'),
  sse(
    "message_delta",
    '{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}',
  ),
  sse("message_stop", '{"type":"message_stop"}'),
].join("");

const ID = {
  id: "chatcmpl-msg_014p7gG3wDgGV9EUtLvnow3U",
  object: "chat.completion.chunk",
  created: 1,
  model: "m",
};
const chunk = (delta: JsonObject, finish: string | null = null) => ({
  ...ID,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
});

const TOOL_CHUNKS = [
  chunk({ role: "assistant", content: "" }),
  ...["Okay", ",", " let", "'s", " check", " the", " weather", " for", " San", " Francisco", ",", " CA", ":"]
    .map((
      t,
    ) => chunk({ content: t })),
  chunk({
    tool_calls: [{
      index: 0,
      id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
      type: "function",
      function: { name: "get_weather", arguments: "" },
    }],
  }),
  ...['{"location":', ' "San', " Francisc", "o,", ' CA"', ",", ' "unit": "fah', 'renheit"}'].map((p) =>
    chunk({ tool_calls: [{ index: 0, function: { arguments: p } }] })
  ),
  chunk({}, "tool_calls"),
  {
    ...ID,
    choices: [],
    usage: {
      prompt_tokens: 472,
      completion_tokens: 89,
      total_tokens: 561,
      prompt_tokens_details: { cached_tokens: 0 },
    },
  },
];

/** A text stream with multi-byte characters (2-, 3- and 4-byte UTF-8) and cache usage. */
const UTF8_STREAM = [
  sse(
    "message_start",
    '{"type":"message_start","message":{"id":"msg_u","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":10,"cache_read_input_tokens":100,"output_tokens":1}}}',
  ),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
  ),
  sse(
    "content_block_delta",
    '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"¡Hola, 世界! 🌍"}}',
  ),
  sse("content_block_stop", '{"type":"content_block_stop","index":0}'),
  sse(
    "message_delta",
    '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}',
  ),
  sse("message_stop", '{"type":"message_stop"}'),
].join("");

Deno.test("anthropic stream: the documented tool-use stream → OpenAI chunks", async () => {
  assert.deepEqual(await collect([encoder.encode(TOOL_STREAM)]), TOOL_CHUNKS);
});

Deno.test("anthropic stream: the same chunks when split at every byte offset, LF, CRLF and CR", async () => {
  for (
    const text of [TOOL_STREAM, TOOL_STREAM.replaceAll("\n", "\r\n"), TOOL_STREAM.replaceAll("\n", "\r")]
  ) {
    const bytes = encoder.encode(text);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const chunks = await collect([bytes.subarray(0, cut), bytes.subarray(cut)]);
      assert.deepEqual(chunks, TOOL_CHUNKS, `split at byte ${cut}`);
    }
  }
});

Deno.test("anthropic stream: one byte at a time", async () => {
  const bytes = encoder.encode(TOOL_STREAM.replaceAll("\n", "\r\n"));
  const pieces = Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
  assert.deepEqual(await collect(pieces), TOOL_CHUNKS);
});

Deno.test("anthropic stream: multi-byte UTF-8 characters split anywhere; cache tokens in usage", async () => {
  const bytes = encoder.encode(UTF8_STREAM);
  const expected = (await collect([bytes])).map((c) => JSON.stringify(c));
  assert.deepEqual(JSON.parse(expected[1]).choices[0].delta, { content: "¡Hola, 世界! 🌍" });
  assert.deepEqual(JSON.parse(expected.at(-1)!).usage, {
    prompt_tokens: 115,
    completion_tokens: 7,
    total_tokens: 122,
    prompt_tokens_details: { cached_tokens: 100, cache_write_5m_tokens: 10, cache_write_1h_tokens: 0 },
  });
  const emoji = bytes.indexOf(0xf0); // first byte of 🌍 (4 bytes)
  for (let cut = 0; cut <= bytes.length; cut++) {
    const chunks = await collect([bytes.subarray(0, cut), bytes.subarray(cut)]);
    assert.deepEqual(
      chunks.map((c) => JSON.stringify(c)),
      expected,
      `split at byte ${cut} (emoji at ${emoji})`,
    );
  }
});

Deno.test("anthropic stream: an error event mid-stream errors the stream with the mapped GatewayError", async () => {
  const text = TOOL_STREAM.slice(0, TOOL_STREAM.indexOf("event: content_block_stop")) +
    sse("error", '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}');
  const reader = translate([encoder.encode(text)]).getReader();
  const received: ChatCompletionChunk[] = [];
  const err = await (async () => {
    try {
      while (true) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        received.push(value);
      }
    } catch (e) {
      return e;
    }
  })();
  assert.ok(err instanceof GatewayError);
  assert.equal(err.status, 503);
  assert.equal(err.code, "upstream_overloaded");
  assert.equal(received.length, 14, "the chunks before the error are delivered");
});

Deno.test("anthropic stream: a stream cut before message_stop errors (truncated), never ends cleanly", async () => {
  const text = TOOL_STREAM.slice(0, TOOL_STREAM.indexOf("event: message_stop"));
  await assert.rejects(collect([encoder.encode(text)]), (err: GatewayError) => {
    assert.equal(err.status, 502);
    return true;
  });
  await assert.rejects(collect([encoder.encode(sse("content_block_stop", '{"index":0}'))]), GatewayError);
  await assert.rejects(collect([encoder.encode("data: not json\n\n")]), GatewayError);
});

Deno.test("anthropic stream: thinking → reasoning_content, signature dropped; tool k counts tools only; {} input", async () => {
  const text = [
    sse(
      "message_start",
      '{"type":"message_start","message":{"id":"msg_t","usage":{"input_tokens":3,"output_tokens":1}}}',
    ),
    sse(
      "content_block_start",
      '{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}',
    ),
    sse(
      "content_block_delta",
      '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}',
    ),
    sse(
      "content_block_delta",
      '{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}',
    ),
    sse("content_block_stop", '{"type":"content_block_stop","index":0}'),
    sse(
      "content_block_start",
      '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"now","input":{}}}',
    ),
    sse("content_block_stop", '{"type":"content_block_stop","index":1}'),
    sse(
      "content_block_start",
      '{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"f","input":{}}}',
    ),
    sse(
      "content_block_delta",
      '{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\\"x\\":1}"}}',
    ),
    sse("content_block_stop", '{"type":"content_block_stop","index":2}'),
    sse("some_future_event", '{"type":"some_future_event"}'),
    sse(
      "message_delta",
      '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}',
    ),
    sse("message_stop", '{"type":"message_stop"}'),
    sse(
      "content_block_start",
      '{"type":"content_block_start","index":3,"content_block":{"type":"text","text":"late"}}',
    ),
  ].join("");
  const deltas = (await collect([encoder.encode(text)])).map((c) => c.choices[0]?.delta);
  assert.deepEqual(deltas, [
    { role: "assistant", content: "" },
    { reasoning_content: "hm" },
    { tool_calls: [{ index: 0, id: "toolu_a", type: "function", function: { name: "now", arguments: "" } }] },
    { tool_calls: [{ index: 0, function: { arguments: "{}" } }] },
    { tool_calls: [{ index: 1, id: "toolu_b", type: "function", function: { name: "f", arguments: "" } }] },
    { tool_calls: [{ index: 1, function: { arguments: '{"x":1}' } }] },
    {},
    undefined,
  ]);
});

Deno.test("anthropic stream: cancelling the chunk stream cancels the upstream body", async () => {
  const cancelled = Promise.withResolvers<void>();
  const bytes = encoder.encode(TOOL_STREAM);
  const pieces = Array.from({ length: 64 }, (_, i) => bytes.subarray(i * 64, (i + 1) * 64));
  const chunks = runStages(
    source(pieces, () => cancelled.resolve()),
    sseParseTransformer(),
    anthropicChunkTransformer({ provider: "claude", model: "m" }),
  );
  const reader = chunks.getReader();
  await reader.read();
  await reader.cancel();
  await cancelled.promise;
});

/**
 * The extended-thinking guide's streaming example (thinking deltas, a signature delta, then the answer), with a
 * redacted_thinking block added as the guide's redaction example shows it.
 */
const THINKING_STREAM = [
  sse(
    "message_start",
    '{"type":"message_start","message":{"id":"msg_01th","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":1}}}',
  ),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}',
  ),
  ...[
    "I need to find the GCD of 1071 and 462 ",
    "using the Euclidean algorithm.\n\n",
    "1071 = 2 × 462 + 147 ✓",
  ].map(
    (t) =>
      sse(
        "content_block_delta",
        JSON.stringify({
          type: "content_block_delta",
          index: 0,
          delta: { type: "thinking_delta", thinking: t },
        }),
      ),
  ),
  sse(
    "content_block_delta",
    '{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}',
  ),
  sse("content_block_stop", '{"type":"content_block_stop","index":0}'),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}}',
  ),
  sse("content_block_stop", '{"type":"content_block_stop","index":1}'),
  sse(
    "content_block_start",
    '{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}',
  ),
  sse(
    "content_block_delta",
    '{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"The greatest common divisor of 1071 and 462 is **21**."}}',
  ),
  sse("content_block_stop", '{"type":"content_block_stop","index":2}'),
  sse(
    "message_delta",
    '{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":180}}',
  ),
  sse("message_stop", '{"type":"message_stop"}'),
].join("");

Deno.test("anthropic stream: thinking deltas → reasoning_content, apart from content, at every byte offset", async () => {
  const bytes = encoder.encode(THINKING_STREAM);
  const expectedReasoning =
    "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.\n\n1071 = 2 × 462 + 147 ✓";
  for (let cut = 0; cut <= bytes.length; cut += 1) {
    const chunks = await collect([bytes.slice(0, cut), bytes.slice(cut)]);
    const deltas = chunks.filter((c) => c.choices.length > 0).map((c) => c.choices[0].delta as JsonObject);
    const joined = (key: string) => deltas.map((d) => typeof d[key] === "string" ? d[key] : "").join("");
    assert.equal(joined("reasoning_content"), expectedReasoning, `cut at ${cut}`);
    assert.equal(
      joined("content"),
      "The greatest common divisor of 1071 and 462 is **21**.",
      `cut at ${cut}`,
    );
    assert.ok(deltas.every((d) => !("content" in d && "reasoning_content" in d)), "never both in one delta");
    assert.ok(!JSON.stringify(chunks).includes("EqQBCgIYAhIM"), "the signature is not exposed");
    assert.ok(!JSON.stringify(chunks).includes("EmwKAhgB"), "redacted thinking is not exposed");
    assert.equal(chunks.at(-2)!.choices[0].finish_reason, "stop");
    assert.equal(chunks.at(-1)!.usage?.completion_tokens, 180);
  }
});
