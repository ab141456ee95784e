import assert from "node:assert/strict";
import type { ChatCompletionChunk } from "../../openai/types.ts";
import { GatewayError } from "../../errors.ts";
import { openAIChunkTransformer } from "./stream.ts";

const chunk = (choices: { index: number; content?: string; finish?: string }[]) => ({
  data: JSON.stringify({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: choices.map(({ index, content, finish }) => ({
      index,
      delta: content === undefined ? {} : { content },
      finish_reason: finish ?? null,
    })),
  }),
});

/** Runs `events` through the transformer; the chunks it passed on, and whether its end threw a 502. */
function run(events: { data: string }[]): { chunks: ChatCompletionChunk[]; cut: boolean } {
  const chunks: ChatCompletionChunk[] = [];
  const controller = {
    enqueue: (c: ChatCompletionChunk) => chunks.push(c),
    terminate: () => {},
  } as unknown as TransformStreamDefaultController<ChatCompletionChunk>;
  const transformer = openAIChunkTransformer("up");
  for (const event of events) transformer.transform(event, controller);
  try {
    transformer.flush?.(controller);
    return { chunks, cut: false };
  } catch (err) {
    assert.ok(err instanceof GatewayError && err.status === 502);
    return { chunks, cut: true };
  }
}

Deno.test("openAIChunkTransformer: without [DONE], a stream is complete only when every choice it began finished", () => {
  // n = 2: choice 0 finished, choice 1 cut mid-text.
  assert.equal(
    run([
      chunk([{ index: 0, content: "a" }, { index: 1, content: "b" }]),
      chunk([{ index: 0, finish: "stop" }]),
      chunk([{ index: 1, content: " partial" }]),
    ]).cut,
    true,
  );
  // Both finished: complete though the upstream sent no [DONE].
  assert.equal(
    run([
      chunk([{ index: 0, content: "a" }, { index: 1, content: "b" }]),
      chunk([{ index: 0, finish: "stop" }, { index: 1, finish: "length" }]),
    ]).cut,
    false,
  );
  // One choice, no finish: cut. [DONE] after a partial answer: complete (the upstream said so).
  assert.equal(run([chunk([{ index: 0, content: "a" }])]).cut, true);
  assert.equal(run([chunk([{ index: 0, content: "a" }]), { data: "[DONE]" }]).cut, false);
});
