/**
 * The accumulator's bound (`cache.max_entry_bytes`): a streamed answer on a cached alias is held only while it
 * could still be an entry; past the bound what was held is dropped and the rest of the stream is not kept.
 */
import assert from "node:assert/strict";
import type { ChatCompletionChunk } from "../openai/types.ts";
import { ChunkAccumulator } from "./chunk_accumulator.ts";

const PIECE = "x".repeat(4096);
const LIMIT = 64 * 1024;

function chunk(delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk {
  return {
    id: "chatcmpl-big",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

Deno.test("chunk accumulator: an answer past the bound is dropped as it crosses it, never held whole", () => {
  const acc = new ChunkAccumulator(LIMIT);
  acc.add(chunk({ role: "assistant", content: "" }));
  let most = 0;
  let stoppedAt = -1;
  for (let i = 0; i < 1000; i++) {
    acc.add(chunk({ content: PIECE }));
    most = Math.max(most, acc.heldBytes);
    if (acc.stopped && stoppedAt < 0) stoppedAt = i;
  }
  acc.add(chunk({}, "stop"));
  assert.ok(most <= LIMIT, `held at most the bound: ${most}`);
  assert.equal(stoppedAt, LIMIT / PIECE.length, "stopped at the first piece past the bound");
  assert.equal(acc.heldBytes, 0, "what it held is dropped");
  assert.equal(acc.completion(), undefined, "no entry");
});

Deno.test("chunk accumulator: every kind of delta counts; an answer at the bound is whole", () => {
  const args = "a".repeat(1000);
  const acc = new ChunkAccumulator(3000 + args.length * 2);
  acc.add(chunk({ role: "assistant", reasoning_content: "r".repeat(1000), content: "c".repeat(1000) }));
  acc.add(chunk({ refusal: "f".repeat(1000) }));
  acc.add(chunk({ tool_calls: [{ index: 0, id: "call_1", function: { name: "f", arguments: args } }] }));
  acc.add(chunk({ function_call: { name: "g", arguments: args } }));
  assert.equal(acc.heldBytes, 5000);
  acc.add(chunk({}, "stop"));
  assert.equal(acc.stopped, false);
  assert.equal(acc.completion()?.choices[0].finish_reason, "stop");
  acc.add(chunk({ content: "one more" }));
  assert.equal(acc.stopped, true, "one unit past the bound");
  assert.equal(acc.completion(), undefined);
});

Deno.test("chunk accumulator: without a bound it keeps everything", () => {
  const acc = new ChunkAccumulator();
  acc.add(chunk({ role: "assistant", content: PIECE.repeat(64) }, "stop"));
  assert.equal(acc.stopped, false);
  assert.equal(
    (acc.completion()?.choices[0].message as { content: string }).content.length,
    PIECE.length * 64,
  );
});
