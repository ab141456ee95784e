/**
 * A custom (freeform) tool's call cached under `cache_tool_calls` (docs/caching.md: a hit shows what the miss
 * showed): `{type: "custom", custom: {name, input}}` comes back on a hit, JSON and streamed, whether a JSON or a
 * streamed answer filled the entry, never as a function call with an empty name.
 */
import assert from "node:assert/strict";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML } from "../helpers/gateway.ts";
import { type RawStep, startRawUpstream } from "../helpers/raw_upstream.ts";

type Json = Record<string, unknown>;

const CALL = {
  id: "call_1",
  type: "custom",
  custom: { name: "apply_patch", input: "*** Begin Patch\n*** End Patch" },
};
const FRAME = { id: "chatcmpl-1", created: 1, model: "gpt-raw" };
const USAGE = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };

const jsonAnswer: RawStep = {
  status: 200,
  headers: { "content-type": "application/json" },
  chunks: [JSON.stringify({
    ...FRAME,
    object: "chat.completion",
    choices: [{
      index: 0,
      finish_reason: "tool_calls",
      logprobs: null,
      message: { role: "assistant", content: null, refusal: null, tool_calls: [CALL] },
    }],
    usage: USAGE,
  })],
};

/** The call streamed as OpenAI's chat completions are reported to stream it: its input in pieces. */
const streamedAnswer: RawStep = (() => {
  const chunk = (delta: Json, finish: string | null = null) =>
    `data: ${
      JSON.stringify({
        ...FRAME,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      })
    }\n\n`;
  const input = CALL.custom.input;
  return {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    chunks: [
      chunk({ role: "assistant", content: null }),
      chunk({
        tool_calls: [{
          index: 0,
          id: CALL.id,
          type: "custom",
          custom: { name: CALL.custom.name, input: "" },
        }],
      }),
      chunk({ tool_calls: [{ index: 0, custom: { input: input.slice(0, 9) } }] }),
      chunk({ tool_calls: [{ index: 0, custom: { input: input.slice(9) } }] }),
      chunk({}, "tool_calls"),
      `data: ${JSON.stringify({ ...FRAME, object: "chat.completion.chunk", choices: [], usage: USAGE })}\n\n`,
      "data: [DONE]\n\n",
    ],
  };
})();

/** A streamed answer's tool calls, added up by index as a client does (pieces of `custom.input` joined). */
function streamedCalls(sse: string): Json[] {
  const calls: Json[] = [];
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const chunk = JSON.parse(line.slice(6));
    for (const delta of chunk.choices.map((c: Json) => c.delta as Json)) {
      for (const part of (delta.tool_calls ?? []) as Json[]) {
        const { index, custom, ...rest } = part as { index: number; custom?: Json };
        const into = calls[index] ??= { ...rest };
        if (custom !== undefined) {
          const held = (into.custom ??= { ...custom, input: "" }) as Json;
          held.input = String(held.input) + String(custom.input ?? "");
        }
      }
    }
  }
  return calls;
}

Deno.test("a cached custom tool call is replayed as it came, JSON and streamed, from a JSON or a streamed miss", async () => {
  const upstream = startRawUpstream();
  const gw = await startGateway(`
providers:
  oa: { type: openai, base_url: "${upstream.url}/v1", api_key: "sk-upstream-key-0123456789" }
models:
  chat-cached: { type: chat, targets: [ { provider: oa, model: gpt-raw } ], cache: { ttl: 10m, cache_tool_calls: true } }
${TEST_TOKENS_YAML}`);
  const post = (content: string, stream: boolean) =>
    fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "chat-cached",
        messages: [{ role: "user", content }],
        tools: [{ type: "custom", custom: { name: "apply_patch" } }],
        stream,
      }),
    });
  try {
    for (const [prompt, fill] of [["JSON miss", jsonAnswer], ["streamed miss", streamedAnswer]] as const) {
      upstream.next = fill;
      const miss = await post(prompt, fill === streamedAnswer);
      assert.equal(miss.headers.get("x-cache"), "MISS", prompt);
      const missCalls = fill === streamedAnswer
        ? streamedCalls(await miss.text())
        : (await miss.json()).choices[0].message.tool_calls;
      assert.deepEqual(missCalls, [CALL], prompt);

      const hit = await post(prompt, false);
      assert.equal(hit.headers.get("x-cache"), "HIT", prompt);
      assert.deepEqual((await hit.json()).choices[0].message.tool_calls, [CALL], prompt);
      const streamedHit = await post(prompt, true);
      assert.equal(streamedHit.headers.get("x-cache"), "HIT", prompt);
      assert.deepEqual(streamedCalls(await streamedHit.text()), [CALL], prompt);
    }
    assert.equal(upstream.requests.length, 2);
  } finally {
    await gw.stop();
    await upstream.stop();
  }
});
