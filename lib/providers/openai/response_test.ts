/** OpenAI-shaped completions: the usage passed on to the client and the records is only counts that are counts. */
import assert from "node:assert/strict";
import { chatCompletionFrom } from "./response.ts";

const completion = (usage: unknown) => ({
  id: "chatcmpl-x",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }],
  usage,
});

Deno.test("openai response: a detail count that is not a count, or claims more than its total, is left out", () => {
  for (const bad of [-5, 2.5, 1e20, 1e308, "100", 101]) {
    const usage = {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      prompt_tokens_details: { cached_tokens: bad, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: bad === 101 ? 11 : bad },
    };
    assert.deepEqual(chatCompletionFrom("oai", completion(usage)).usage, {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      prompt_tokens_details: { audio_tokens: 0 },
      completion_tokens_details: {},
    }, String(bad));
  }
  const good = {
    prompt_tokens: 100,
    completion_tokens: 10,
    total_tokens: 110,
    prompt_tokens_details: { cached_tokens: 100 },
    completion_tokens_details: { reasoning_tokens: 10 },
  };
  assert.deepEqual(chatCompletionFrom("oai", completion(structuredClone(good))).usage, good);
});

Deno.test("openai response: usage whose prompt or completion count is not a count is dropped", () => {
  for (const bad of [-5, 2.5, 1e20, "100"]) {
    const usage = { prompt_tokens: bad, completion_tokens: 10, total_tokens: 110 };
    assert.equal(chatCompletionFrom("oai", completion(usage)).usage, undefined, String(bad));
  }
});
