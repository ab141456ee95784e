import assert from "node:assert/strict";
import type { ChatCompletionChunk, JsonObject } from "../../openai/types.ts";
import { ToolCallIndexes } from "./tool_call_indexes.ts";

/** The indexes the deltas get, each chunk's calls in a list of its own. */
function numbered(...chunks: JsonObject[][]): (number | undefined)[][] {
  const indexes = new ToolCallIndexes();
  return chunks.map((calls) => {
    const chunk = {
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta: { tool_calls: structuredClone(calls) }, finish_reason: null }],
    } as ChatCompletionChunk;
    indexes.number(chunk);
    const delta = chunk.choices[0].delta as { tool_calls: JsonObject[] };
    return delta.tool_calls.map((c) => c.index as number | undefined);
  });
}

Deno.test("tool call indexes: a well-behaved stream passes unchanged, interleaved or not", () => {
  assert.deepEqual(
    numbered([{ index: 0, id: "a" }], [{ index: 0 }], [{ index: 1, id: "b" }], [{ index: 0 }], [{
      index: 1,
    }]),
    [[0], [0], [1], [0], [1]],
  );
  // The same id on every fragment continues the call.
  assert.deepEqual(numbered([{ index: 2, id: "a" }], [{ index: 2, id: "a" }]), [[2], [2]]);
});

Deno.test("tool call indexes: calls without index are told apart by their ids (Gemini's OpenAI layer)", () => {
  assert.deepEqual(numbered([{ id: "a" }], [{ id: "b" }]), [[0], [1]]);
  assert.deepEqual(numbered([{ id: "a" }, { id: "b" }]), [[0, 1]]);
  // A fragment without an id continues the call before it; so does one with its id.
  assert.deepEqual(numbered([{ id: "a" }], [{}], [{ id: "a" }], [{ id: "b" }], [{}]), [[0], [0], [0], [1], [
    1,
  ]]);
  // Without any id, one call.
  assert.deepEqual(numbered([{}], [{}]), [[0], [0]]);
});

Deno.test("tool call indexes: calls that share an index but not an id are apart (Ollama gives each 0)", () => {
  assert.deepEqual(numbered([{ index: 0, id: "a" }], [{ index: 0, id: "b" }], [{ index: 0 }]), [[0], [1], [
    1,
  ]]);
  // A later upstream index the gateway already gave out takes the next free one.
  assert.deepEqual(numbered([{ index: 0, id: "a" }], [{ index: 0, id: "b" }], [{ index: 1, id: "c" }]), [
    [0],
    [1],
    [2],
  ]);
});
