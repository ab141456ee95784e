/**
 * Anthropic stream → OpenAI usage: the counts of message_start overlaid by message_delta's cumulative ones, read
 * once at message_stop by the rule for every vendor's counts; no usage chunk when there are none, or any is not
 * a count, so the gateway counts the tokens itself.
 */
import assert from "node:assert/strict";
import { collect, encoder, sse } from "./stream_test_helpers.ts";

Deno.test("anthropic stream: usage read from message_start and cumulative message_delta; none without counts", async () => {
  const stream = (startUsage: string, deltaUsage: string) =>
    encoder.encode([
      sse("message_start", `{"type":"message_start","message":{"id":"msg_u"${startUsage}}}`),
      sse(
        "content_block_start",
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
      ),
      sse(
        "content_block_delta",
        '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}',
      ),
      sse("content_block_stop", '{"type":"content_block_stop","index":0}'),
      sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"}${deltaUsage}}`),
      sse("message_stop", '{"type":"message_stop"}'),
    ].join(""));
  const usageOf = async (startUsage: string, deltaUsage: string) =>
    (await collect([stream(startUsage, deltaUsage)])).filter((c) => c.usage !== undefined).map((c) =>
      c.usage
    );
  // No usage anywhere, or no input count: no usage chunk, so the gateway counts the tokens (never 0 tokens).
  assert.deepEqual(await usageOf("", ""), []);
  assert.deepEqual(await usageOf("", ',"usage":{"output_tokens":5}'), []);
  assert.deepEqual(await usageOf(',"usage":{"output_tokens":1}', ',"usage":{"output_tokens":5}'), []);
  // message_delta's counts are cumulative and may bring the input count (null: not updated).
  assert.deepEqual(
    await usageOf("", ',"usage":{"input_tokens":9,"output_tokens":5,"cache_read_input_tokens":null}'),
    [{
      prompt_tokens: 9,
      completion_tokens: 5,
      total_tokens: 14,
      prompt_tokens_details: { cached_tokens: 0 },
    }],
  );
  assert.deepEqual(
    await usageOf(
      ',"usage":{"input_tokens":9,"output_tokens":1,"cache_read_input_tokens":3}',
      ',"usage":{"input_tokens":null,"output_tokens":5}',
    ),
    [{
      prompt_tokens: 12,
      completion_tokens: 5,
      total_tokens: 17,
      prompt_tokens_details: { cached_tokens: 3 },
    }],
  );
});

Deno.test("anthropic stream: a cumulative update whose count is not a count makes the usage untrusted (no usage chunk)", async () => {
  for (const bad of [-5000, 2.5, 1e19, 1e308, "100", true]) {
    const text = [
      sse(
        "message_start",
        '{"type":"message_start","message":{"id":"m","usage":{"input_tokens":20,"output_tokens":1}}}',
      ),
      sse(
        "message_delta",
        `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":${
          JSON.stringify(bad)
        }}}`,
      ),
      sse("message_stop", '{"type":"message_stop"}'),
    ].join("");
    const chunks = await collect([encoder.encode(text)]);
    assert.ok(
      chunks.every((c) => c.usage === undefined),
      `output_tokens ${bad}: ${JSON.stringify(chunks.at(-1))}`,
    );
  }
});
