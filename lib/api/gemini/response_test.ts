import assert from "node:assert/strict";
import type { ChatCompletion, ChatCompletionChunk } from "../../openai/types.ts";
import { completionToGemini, GeminiChunks, usageMetadata } from "./response.ts";

const FRAME = { alias: "a", responseId: "r" };
const USAGE = { prompt_tokens: 9, completion_tokens: 6, total_tokens: 15 };
const REFUSAL = "I'm sorry, I cannot help.";

type Candidate = { content: { parts: { text?: string }[] }; finishReason?: string };
const candidate = (response: Record<string, unknown>) => (response.candidates as Candidate[])[0];

Deno.test("gemini response: a refusal is the answer's text, finished by SAFETY", () => {
  const completion: ChatCompletion = {
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "u",
    choices: [{
      index: 0,
      message: { role: "assistant", content: null, refusal: REFUSAL },
      finish_reason: "stop",
    }],
  };
  const whole = candidate(completionToGemini(completion, FRAME, USAGE));
  assert.deepEqual(whole.content.parts, [{ text: REFUSAL }]);
  assert.equal(whole.finishReason, "SAFETY");
});

Deno.test("gemini response: a streamed refusal arrives as text, is counted, and finishes by SAFETY", async () => {
  const chunks = new GeminiChunks(FRAME);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk => ({
    id: "c",
    object: "chat.completion.chunk",
    created: 1,
    model: "u",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const shown = [
    chunk({ role: "assistant", content: null, refusal: "" }),
    chunk({ refusal: "I'm sorry, " }),
    chunk({ refusal: "I cannot help." }),
    chunk({}, "stop"),
  ].flatMap((c) => chunks.chunk(c)).flatMap((c) => candidate(c).content.parts.map((p) => p.text));
  assert.equal(shown.join(""), REFUSAL);
  assert.ok((await chunks.texts.count()) > 0, "what the client got is counted when no usage comes");
  assert.equal(candidate(chunks.finish(USAGE)).finishReason, "SAFETY");
});

Deno.test("gemini response: the model's reasoning is shown as thoughts only when includeThoughts asked for them", async () => {
  const completion: ChatCompletion = {
    id: "c",
    object: "chat.completion",
    created: 1,
    model: "u",
    choices: [{
      index: 0,
      message: { role: "assistant", content: "Answer.", reasoning_content: "Internal notes." },
      finish_reason: "stop",
    }],
  };
  const parts = (thoughts: boolean) =>
    candidate(completionToGemini(completion, { ...FRAME, thoughts }, USAGE));
  assert.deepEqual(parts(false).content.parts, [{ text: "Answer." }]);
  assert.deepEqual(parts(true).content.parts, [{ text: "Internal notes.", thought: true }, {
    text: "Answer.",
  }]);

  const streamed = async (thoughts: boolean) => {
    const chunks = new GeminiChunks({ ...FRAME, thoughts });
    const delta = (d: Record<string, unknown>): ChatCompletionChunk => ({
      id: "c",
      object: "chat.completion.chunk",
      created: 1,
      model: "u",
      choices: [{ index: 0, delta: d, finish_reason: null }],
    });
    const shown = [delta({ reasoning_content: "Internal notes." }), delta({ content: "Answer." })]
      .flatMap((c) => chunks.chunk(c)).flatMap((c) => candidate(c).content.parts);
    // The reasoning is counted either way: the upstream spent those tokens.
    return { shown, counted: await chunks.texts.count() };
  };
  const hidden = await streamed(false);
  assert.deepEqual(hidden.shown, [{ text: "Answer." }]);
  const shown = await streamed(true);
  assert.deepEqual(shown.shown, [{ text: "Internal notes.", thought: true }, { text: "Answer." }]);
  assert.equal(hidden.counted, shown.counted);
});

/** A stream chunk of `delta`, finished by `finish` when given. */
const streamChunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk => ({
  id: "c",
  object: "chat.completion.chunk",
  created: 1,
  model: "u",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

Deno.test("gemini response: a cut answer finishes by MAX_TOKENS, whole and streamed; others by STOP", () => {
  for (const [reason, google] of [["length", "MAX_TOKENS"], ["stop", "STOP"], ["tool_calls", "STOP"]]) {
    const completion: ChatCompletion = {
      id: "c",
      object: "chat.completion",
      created: 1,
      model: "u",
      choices: [{ index: 0, message: { role: "assistant", content: "Partial" }, finish_reason: reason }],
    } as ChatCompletion;
    assert.equal(candidate(completionToGemini(completion, FRAME, USAGE)).finishReason, google, reason);
    const chunks = new GeminiChunks(FRAME);
    chunks.chunk(streamChunk({ content: "Partial" }));
    chunks.chunk(streamChunk({}, reason));
    assert.equal(candidate(chunks.finish(USAGE)).finishReason, google, `streamed ${reason}`);
  }
});

Deno.test("gemini response: a stream ends as Google ends one, with an empty text part or the calls held", () => {
  const text = new GeminiChunks(FRAME);
  text.chunk(streamChunk({ content: "Done." }));
  assert.deepEqual(candidate(text.finish(USAGE)).content.parts, [{ text: "" }]);
  const call = new GeminiChunks(FRAME);
  call.chunk(
    streamChunk({ tool_calls: [{ index: 0, id: "c1", function: { name: "ls", arguments: "{}" } }] }),
  );
  assert.deepEqual(candidate(call.finish(USAGE)).content.parts, [{
    functionCall: { name: "ls", args: {}, id: "c1" },
  }]);
});

Deno.test("gemini response: usageMetadata counts thoughts beside the candidates, and cached tokens only when some were", () => {
  assert.deepEqual(usageMetadata({ ...USAGE, prompt_tokens_details: { cached_tokens: 0 } }), {
    promptTokenCount: 9,
    candidatesTokenCount: 6,
    totalTokenCount: 15,
  });
  assert.deepEqual(
    usageMetadata({
      ...USAGE,
      prompt_tokens_details: { cached_tokens: 4 },
      completion_tokens_details: { reasoning_tokens: 2 },
    }),
    {
      promptTokenCount: 9,
      candidatesTokenCount: 4,
      totalTokenCount: 15,
      thoughtsTokenCount: 2,
      cachedContentTokenCount: 4,
    },
  );
});
