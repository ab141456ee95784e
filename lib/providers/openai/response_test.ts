/**
 * OpenAI-shaped completions: the usage passed on to the client and the records is only counts that are counts,
 * and an `{"error": …}` answered with a 200 is the upstream's error (embeddings' too).
 */
import assert from "node:assert/strict";
import type { GatewayError } from "../../errors.ts";
import type { ResolvedTarget } from "../../config/types.ts";
import type { UpstreamCall } from "../types.ts";
import { chatCompletionFrom, embeddingResultFrom, openAIErrorBody } from "./response.ts";

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

Deno.test("openai response: a 200 with an error body and no choices is the upstream's error, as its stream event is", () => {
  const SECRET = "sk-or-secret-0123456789abcdef";
  const cases: [unknown, number, string, string][] = [
    // OpenRouter's rate limit once the model has started: its status, its words, OpenAI's code.
    [
      { code: 429, message: "Rate limit exceeded: free-models-per-min" },
      429,
      "rate_limit_exceeded",
      "Rate limit",
    ],
    [{ code: 400, message: "Bad input" }, 400, "", "Bad input"],
    [{ type: "rate_limit_error", message: "slow down" }, 429, "rate_limit_exceeded", "slow down"],
    // A status-less error: the upstream's words in a 502, which routing retries.
    [{ message: `boom with ${SECRET}` }, 502, "upstream_error", "boom with"],
  ];
  for (const [error, status, code, words] of cases) {
    assert.throws(() => chatCompletionFrom("or", { error } as never, [SECRET]), (err: GatewayError) => {
      assert.equal(err.status, status, JSON.stringify(error));
      assert.equal(err.code ?? "", code, JSON.stringify(error));
      assert.ok(err.message.includes(words), err.message);
      assert.ok(!err.message.includes(SECRET), err.message);
      return true;
    });
  }
  // Without an error, or beside choices, it is what it was: a malformed answer, or a completion.
  assert.throws(
    () => chatCompletionFrom("or", { error: null }),
    (err: GatewayError) => err.status === 502 && err.code === "upstream_invalid_response",
  );
  const both = { ...completion(undefined), error: { code: 429, message: "x" } };
  assert.equal(chatCompletionFrom("or", both).choices.length, 1);
});

Deno.test("openai response: embeddings answered with a 200 and an error body without data are the upstream's error", () => {
  const SECRET = "sk-or-secret-0123456789abcdef";
  const request = { model: "e", input: "hi" };
  const error = { code: 429, message: `Rate limit exceeded for ${SECRET}` };
  assert.throws(() => embeddingResultFrom("or", { error }, request, [SECRET]), (err: GatewayError) => {
    assert.equal(err.status, 429);
    assert.equal(err.code, "rate_limit_exceeded");
    assert.ok(err.message.startsWith("Rate limit exceeded for"), err.message);
    assert.ok(!err.message.includes(SECRET), err.message);
    return true;
  });
  // Without an error it is a malformed answer; beside data, the vectors are read as sent.
  assert.throws(
    () => embeddingResultFrom("or", { error: null }, request),
    (err: GatewayError) => err.status === 502 && err.code === "upstream_invalid_response",
  );
  const both = { data: [{ index: 0, embedding: [0.5] }], error };
  assert.deepEqual(embeddingResultFrom("or", both, request).data, [{ index: 0, embedding: [0.5] }]);
});

Deno.test("openai response: the errorBody hook leaves every answer alone (a completion, a Response, a moderation, a count) and throws an error body", () => {
  const SECRET = "sk-or-secret-0123456789abcdef";
  const call = { target: { provider: "or" } as ResolvedTarget } as UpstreamCall;
  const check = openAIErrorBody([SECRET]);
  const error = { code: 429, message: `Rate limit exceeded for ${SECRET}` };
  assert.throws(() => check({ error }, call), (err: GatewayError) => {
    assert.equal(err.status, 429);
    assert.ok(!err.message.includes(SECRET), err.message);
    return true;
  });
  // The answer's own fields make it the answer, whatever its `error` says: each reader checks it after.
  for (const field of ["choices", "output", "results", "input_tokens"]) {
    check({ [field]: field === "input_tokens" ? 3 : [], error }, call);
  }
});
