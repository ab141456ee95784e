/**
 * The cost arithmetic, class by class, to the micro-dollar: cached reads, cache writes (5-minute, 1-hour),
 * reasoning priced apart, the long-context tier, and each class's fallback when it has no price of its own.
 */
import assert from "node:assert/strict";
import { costOfUsage, tokenClassesOf, type TokenPrices } from "./cost.ts";

const micro = (dollars: number) => Math.round(dollars * 1_000_000);

Deno.test("cost: plain input and output", () => {
  const cost = costOfUsage({ input: 2.5, output: 10 }, { prompt: 1_000, completion: 500 });
  assert.equal(micro(cost.total), micro((1_000 * 2.5 + 500 * 10) / 1e6));
  assert.equal(micro(cost.input), 2_500);
  assert.equal(micro(cost.output), 5_000);
});

Deno.test("cost: cached reads at their price, the rest of the prompt at input (OpenAI, Gemini: prompt includes them)", () => {
  const prices: TokenPrices = { input: 1.25, output: 10, cached_input: 0.125 };
  const cost = costOfUsage(prices, { prompt: 10_000, completion: 1_000, cachedRead: 8_000 });
  // 2,000 uncached × 1.25 + 8,000 cached × 0.125 + 1,000 × 10, per million.
  assert.equal(micro(cost.input), 2_500);
  assert.equal(micro(cost.cached), 1_000);
  assert.equal(micro(cost.output), 10_000);
  assert.equal(micro(cost.total), 13_500);
});

Deno.test("cost: Anthropic's cache writes, 5-minute and 1-hour, and reads (normalised into the prompt)", () => {
  const sonnet: TokenPrices = {
    input: 3,
    output: 15,
    cached_input: 0.3,
    cache_write_5m: 3.75,
    cache_write_1h: 6,
  };
  const cost = costOfUsage(sonnet, {
    prompt: 100 + 2_000 + 1_000 + 5_000,
    completion: 300,
    cachedRead: 5_000,
    cacheWrite5m: 2_000,
    cacheWrite1h: 1_000,
  });
  assert.equal(micro(cost.input), 300); // 100 × 3
  assert.equal(micro(cost.cached), 1_500); // 5,000 × 0.3
  assert.equal(micro(cost.cacheWrite), 7_500 + 6_000); // 2,000 × 3.75 + 1,000 × 6
  assert.equal(micro(cost.output), 4_500); // 300 × 15
  assert.equal(micro(cost.total), 300 + 1_500 + 13_500 + 4_500);
});

Deno.test("cost: web searches at their price per 1,000, apart from tokens and the long-context tier", () => {
  const prices: TokenPrices = {
    input: 3,
    output: 15,
    web_search_per_1k: 10,
    long_context: { above: 200_000, input: 6, output: 22.5 },
  };
  const cost = costOfUsage(prices, { prompt: 1_000, completion: 100, webSearches: 3 });
  assert.equal(micro(cost.webSearch), micro(0.03));
  assert.equal(micro(cost.total), micro(0.03 + (1_000 * 3 + 100 * 15) / 1e6));
  // Above the tier a search costs the same: the vendors price it per call.
  assert.equal(
    micro(costOfUsage(prices, { prompt: 300_000, completion: 0, webSearches: 1 }).webSearch),
    10_000,
  );
  // Without a price for them (or with none run), searches cost nothing, and nonsense counts count as zero.
  assert.equal(
    costOfUsage({ input: 3, output: 15 }, { prompt: 1, completion: 1, webSearches: 5 }).webSearch,
    0,
  );
  assert.equal(costOfUsage(prices, { prompt: 1, completion: 1, webSearches: -4 }).webSearch, 0);
  assert.equal(costOfUsage(prices, { prompt: 1, completion: 1 }).webSearch, 0);
});

Deno.test("cost: fallbacks — cached → input, 1-hour write → 5-minute → input, reasoning → output", () => {
  const bare: TokenPrices = { input: 2, output: 8 };
  const cost = costOfUsage(bare, {
    prompt: 4_000,
    completion: 2_000,
    cachedRead: 1_000,
    cacheWrite5m: 1_000,
    cacheWrite1h: 1_000,
    reasoning: 1_500,
  });
  assert.equal(micro(cost.total), micro((4_000 * 2 + 2_000 * 8) / 1e6), "every class at input or output");
  const fiveOnly = costOfUsage({ input: 2, output: 8, cache_write_5m: 2.5 }, {
    prompt: 1_000,
    completion: 0,
    cacheWrite1h: 1_000,
  });
  assert.equal(micro(fiveOnly.cacheWrite), 2_500, "a 1-hour write without its own price at the 5-minute one");
});

Deno.test("cost: reasoning priced apart is taken out of the output", () => {
  const cost = costOfUsage({ input: 1, output: 4, reasoning: 3 }, {
    prompt: 0,
    completion: 1_000,
    reasoning: 600,
  });
  assert.equal(micro(cost.reasoning), 1_800);
  assert.equal(micro(cost.output), 1_600);
});

Deno.test("cost: above a long-context threshold the tier's rates apply to the whole request", () => {
  const pro: TokenPrices = {
    input: 1.25,
    output: 10,
    cached_input: 0.125,
    long_context: { above: 200_000, input: 2.5, output: 15, cached_input: 0.25 },
  };
  const small = costOfUsage(pro, { prompt: 200_000, completion: 1_000 });
  assert.equal(micro(small.total), micro((200_000 * 1.25 + 1_000 * 10) / 1e6));
  const large = costOfUsage(pro, { prompt: 300_000, completion: 1_000, cachedRead: 100_000 });
  assert.equal(micro(large.total), micro((200_000 * 2.5 + 100_000 * 0.25 + 1_000 * 15) / 1e6));
});

Deno.test("cost: no price is no cost; nonsense counts count as zero; classes never exceed the totals", () => {
  assert.equal(costOfUsage(null, { prompt: 10, completion: 10 }).total, 0);
  const odd = costOfUsage({ input: 1, output: 1 }, { prompt: 100, completion: -5, cachedRead: 500 });
  assert.equal(
    micro(odd.total),
    micro(100 * 1 / 1e6 * 0 + 100 * 1 / 1e6),
    "the cached count is capped at the prompt",
  );
  assert.deepEqual(
    tokenClassesOf(10, 5, {
      prompt_tokens_details: { cached_tokens: 4, cache_write_5m_tokens: 2 },
      completion_tokens_details: { reasoning_tokens: 3 },
    }),
    { prompt: 10, completion: 5, cachedRead: 4, cacheWrite5m: 2, cacheWrite1h: undefined, reasoning: 3 },
  );
});

// The test above prices cached reads at the input rate, so an uncapped cached count nets out to the same
// total there; with a cheaper cached rate it would go negative and credit the budget instead of charging it.
Deno.test("cost: a vendor reporting more cached tokens than the prompt is charged the prompt as cached, never a credit", () => {
  const cost = costOfUsage({ input: 3, output: 15, cached_input: 0.3 }, {
    prompt: 100,
    completion: 0,
    cachedRead: 1_000,
  });
  for (const [field, value] of Object.entries(cost)) {
    assert.ok(value >= 0, `${field} is ${value}, below zero`);
  }
  assert.equal(cost.input, 0, "all of the prompt was cached");
  assert.equal(micro(cost.cached), micro(100 * 0.3 / 1e6));
  assert.equal(cost.cacheWrite, 0);
  assert.equal(micro(cost.total), micro(100 * 0.3 / 1e6));
});

Deno.test("cost: above a long-context threshold, cache reads and writes follow the tier's input (Sonnet 4 over 200K)", () => {
  // Anthropic: over 200K prompt tokens Sonnet 4 costs $6 input / $22.50 output, and the caching multipliers apply
  // on top: reads 0.1 × $6, 5-minute writes 1.25 × $6, 1-hour writes 2 × $6.
  const sonnet: TokenPrices = {
    input: 3,
    output: 15,
    cached_input: 0.3,
    cache_write_5m: 3.75,
    cache_write_1h: 6,
    long_context: { above: 200_000, input: 6, output: 22.5 },
  };
  const cost = costOfUsage(sonnet, {
    prompt: 400_000,
    completion: 1_000,
    cachedRead: 100_000,
    cacheWrite5m: 100_000,
    cacheWrite1h: 100_000,
  });
  assert.equal(micro(cost.input), micro(100_000 * 6 / 1e6));
  assert.equal(micro(cost.cached), micro(100_000 * 0.6 / 1e6));
  assert.equal(micro(cost.cacheWrite), micro(100_000 * (7.5 + 12) / 1e6));
  assert.equal(micro(cost.output), micro(1_000 * 22.5 / 1e6));
  // A tier's own cached rate wins; with no cached rate at all, cached input is the tier's input.
  const own = costOfUsage({ ...sonnet, long_context: { ...sonnet.long_context!, cached_input: 1 } }, {
    prompt: 300_000,
    completion: 0,
    cachedRead: 100_000,
  });
  assert.equal(micro(own.cached), micro(100_000 * 1 / 1e6));
  const plain = costOfUsage({ input: 1, output: 2, long_context: { above: 10, input: 4, output: 8 } }, {
    prompt: 100,
    completion: 0,
    cachedRead: 50,
  });
  assert.equal(micro(plain.cached), micro(50 * 4 / 1e6));
  // Below the threshold the base rates apply.
  const below = costOfUsage(sonnet, { prompt: 200_000, completion: 0, cachedRead: 100_000 });
  assert.equal(micro(below.cached), micro(100_000 * 0.3 / 1e6));
});

Deno.test("cost: audio tokens at the audio rates where set, within uncached input and non-reasoning output", () => {
  const audio: TokenPrices = {
    input: 2.5,
    output: 10,
    cached_input: 1.25,
    audio_input: 40,
    audio_output: 80,
  };
  const usage = tokenClassesOf(1_000, 500, {
    prompt_tokens_details: { cached_tokens: 200, audio_tokens: 900 },
    completion_tokens_details: { audio_tokens: 400 },
  });
  assert.equal(usage.audioInput, 900);
  assert.equal(usage.audioOutput, 400);
  const cost = costOfUsage(audio, usage);
  // 200 cached at the cached rate; of the 800 uncached, all are audio (capped at the uncached input).
  assert.equal(micro(cost.cached), micro(200 * 1.25 / 1e6));
  assert.equal(micro(cost.input), micro(800 * 40 / 1e6));
  assert.equal(micro(cost.output), micro((100 * 10 + 400 * 80) / 1e6));
  // Without audio rates, audio is text.
  const text = costOfUsage({ input: 2.5, output: 10, cached_input: 1.25 }, usage);
  assert.equal(micro(text.total), micro((200 * 1.25 + 800 * 2.5 + 500 * 10) / 1e6));
  // Usage without audio keeps its shape.
  assert.equal("audioInput" in tokenClassesOf(10, 5, {}), false);
});
