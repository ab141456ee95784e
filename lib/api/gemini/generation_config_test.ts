import assert from "node:assert/strict";
import { GatewayError } from "../../errors.ts";
import type { JsonObject } from "../../openai/types.ts";
import { effortForBudget } from "../../openai/effort_for_budget.ts";
import { parseGeminiRequest } from "./request.ts";

const parse = (generationConfig: JsonObject) =>
  parseGeminiRequest(
    { contents: [{ role: "user", parts: [{ text: "Hi" }] }], generationConfig },
    "alias",
    false,
  );

Deno.test("gemini generationConfig: numbers written as strings are read as Google reads them (proto3 JSON)", () => {
  const { chat, tolerance } = parse({
    temperature: "0.5",
    topP: ".9",
    topK: "40",
    maxOutputTokens: "256",
    seed: "-7",
    presencePenalty: "1e-1",
    frequencyPenalty: "-0.25",
    candidateCount: "1",
    // An integer written with a fraction of zero is one, as proto3 JSON reads it.
    thinkingConfig: { thinkingBudget: "8192.0" },
  });
  assert.deepEqual(
    [
      chat.temperature,
      chat.top_p,
      chat.top_k,
      chat.max_completion_tokens,
      chat.seed,
      chat.presence_penalty,
      chat.frequency_penalty,
    ],
    [0.5, 0.9, 40, 256, -7, 0.1, -0.25],
  );
  assert.equal(chat.reasoning_effort, "medium");
  assert.equal("n" in chat, false);
  assert.deepEqual(tolerance, { refusal: null, native: [], dropped: [] });
});

Deno.test("gemini generationConfig: what is no number, no integer or no finite one is Google's 400 naming it", () => {
  const cases: [JsonObject, string, RegExp][] = [
    [{ temperature: "hot" }, "generationConfig.temperature", /expected a number/],
    [{ temperature: "" }, "generationConfig.temperature", /expected a number/],
    [{ temperature: " 1" }, "generationConfig.temperature", /expected a number/],
    [{ topP: "0x1" }, "generationConfig.topP", /expected a number/],
    [{ temperature: "NaN" }, "generationConfig.temperature", /expected a finite number/],
    [{ presencePenalty: "-Infinity" }, "generationConfig.presencePenalty", /expected a finite number/],
    [{ maxOutputTokens: "1.5" }, "generationConfig.maxOutputTokens", /expected an integer/],
    [{ maxOutputTokens: 2.5 }, "generationConfig.maxOutputTokens", /expected an integer/],
    [{ seed: "2147483648" }, "generationConfig.seed", /expected an integer/],
    [{ topK: "Infinity" }, "generationConfig.topK", /expected a finite number/],
    [{ candidateCount: "2" }, "generationConfig.candidateCount", /only 1 candidate/],
    [
      { thinkingConfig: { thinkingBudget: "lots" } },
      "generationConfig.thinkingConfig.thinkingBudget",
      /number/,
    ],
  ];
  for (const [config, param, message] of cases) {
    assert.throws(() => parse(config), (e: unknown) => {
      return e instanceof GatewayError && e.status === 400 && e.param === param && message.test(e.message);
    }, JSON.stringify(config));
  }
});

Deno.test("gemini generationConfig: a thinkingBudget is the effort the Messages API gives the same budget_tokens", () => {
  // The boundaries sit midway (on a log scale) between the efforts' budgets: 2,048 / 8,192 / 24,576.
  const cases: [number, string][] = [[1, "low"], [4095, "low"], [4096, "medium"], [14_188, "medium"], [
    14_189,
    "high",
  ], [100_000, "high"]];
  for (const [budget, effort] of cases) {
    const { chat } = parse({ thinkingConfig: { thinkingBudget: budget } });
    assert.deepEqual([chat.reasoning_effort, effortForBudget(budget)], [effort, effort], String(budget));
  }
});
