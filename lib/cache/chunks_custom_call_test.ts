/**
 * A custom (freeform) tool's call in a cached answer: kept as `{type: "custom", custom: {name, input}}`, replayed
 * as such (the whole call in one delta), and added up from a stream, so a hit shows what the miss showed.
 */
import assert from "node:assert/strict";
import type { ChatCompletion, ChatCompletionChunk, JsonObject } from "../openai/types.ts";
import { completionChunks, normaliseCompletion } from "./chunks.ts";
import { ChunkAccumulator } from "./chunk_accumulator.ts";

const FUNCTION_CALL = {
  id: "call_0",
  type: "function",
  function: { name: "ls", arguments: '{"dir":"src"}' },
};
const CUSTOM_CALL = {
  id: "call_1",
  type: "custom",
  custom: { name: "apply_patch", input: "*** Begin Patch\n".repeat(4) },
};

const ANSWER: ChatCompletion = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "gpt-test",
  choices: [{
    index: 0,
    message: { role: "assistant", content: null, tool_calls: [FUNCTION_CALL, CUSTOM_CALL] },
    logprobs: null,
    finish_reason: "tool_calls",
  }],
  usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
};

function accumulate(chunks: ChatCompletionChunk[]): ChatCompletion | undefined {
  const sum = new ChunkAccumulator();
  for (const chunk of chunks) sum.add(structuredClone(chunk));
  return sum.completion();
}

const callsOf = (c: ChatCompletion | undefined) =>
  (c?.choices[0].message as JsonObject | undefined)?.tool_calls;

const callDeltas = (chunks: ChatCompletionChunk[]) =>
  chunks.flatMap((c) =>
    c.choices.flatMap((ch) => ((ch.delta as JsonObject).tool_calls ?? []) as JsonObject[])
  );

Deno.test("cache chunks: a custom tool's call is kept, replayed whole in one delta, and added up again", () => {
  const stored = normaliseCompletion(structuredClone(ANSWER));
  assert.deepEqual(callsOf(stored), [FUNCTION_CALL, CUSTOM_CALL]);
  const chunks = completionChunks(stored, { id: "chatcmpl-hit", created: 2 });
  const custom = callDeltas(chunks).filter((d) => d.index === 1);
  assert.deepEqual(custom, [{ index: 1, ...CUSTOM_CALL }]);
  assert.deepEqual(accumulate(chunks), normaliseCompletion({ ...ANSWER, id: "chatcmpl-hit", created: 2 }));
});

Deno.test("cache chunks: an upstream's streamed custom call, its input in pieces, is stored as it came", () => {
  const frame = { id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "gpt-test" } as const;
  const at = (delta: JsonObject, finish: string | null = null): ChatCompletionChunk => ({
    ...frame,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  const input = CUSTOM_CALL.custom.input;
  const chunks = [
    at({ role: "assistant", content: null }),
    at({
      tool_calls: [{ index: 0, id: "call_1", type: "custom", custom: { name: "apply_patch", input: "" } }],
    }),
    at({ tool_calls: [{ index: 0, custom: { input: input.slice(0, 10) } }] }),
    at({ tool_calls: [{ index: 0, custom: { input: input.slice(10) } }] }),
    at({}, "tool_calls"),
  ];
  assert.deepEqual(callsOf(accumulate(chunks)), [CUSTOM_CALL]);
});
