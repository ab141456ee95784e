/**
 * What a request cost, from its real usage and its target's price, class by class: uncached input, cached input
 * (read), cache writes (Anthropic's 5-minute and 1-hour), output, and reasoning where it is priced apart.
 *
 * The counts are the chat form's, which every provider adapter normalises to OpenAI's convention: the prompt
 * count includes cached reads and cache writes (`prompt_tokens_details.cached_tokens`, `cache_write_*`), and
 * the completion count includes reasoning (`completion_tokens_details.reasoning_tokens`). (At the vendors,
 * OpenAI's and Gemini's prompt counts include cached tokens while Anthropic's and Bedrock's input counts do not;
 * their adapters add them in.) So uncached input is the prompt less the cached and written tokens.
 *
 * A class with no price of its own falls back: cached → input, 1-hour cache write → 5-minute → input,
 * reasoning → output. Above a long-context tier's threshold (the prompt's size), the tier's rates apply to the
 * whole request, as the vendors price it. Cache reads and writes follow the tier as its input does: a vendor
 * prices them as a fixed share of the input rate in force (Anthropic: "prompt caching multipliers apply on top
 * of long context pricing", reads 0.1×, 5-minute writes 1.25×, 1-hour 2× of the $6 tier input of Sonnet 4;
 * OpenAI's and Gemini's tiers double their cached rate with their input), so without a rate of the tier's own
 * they are the base rates scaled by `long_context.input / input`; with no base rate, the tier's input.
 *
 * Audio (OpenAI's `prompt_tokens_details.audio_tokens` and `completion_tokens_details.audio_tokens`, within the
 * prompt and completion counts) is priced at `audio_input` / `audio_output` where the target sets them, as part
 * of the uncached input and of the output other than reasoning; without them it is priced as text. Audio rates
 * are not tiered, and cached audio is cached input.
 *
 * Web searches an upstream ran for the answer (Anthropic's `usage.server_tool_use.web_search_requests`, the
 * Responses API's `web_search_call` items) are priced per search at `web_search_per_1k`, the vendors' unit
 * (Anthropic: $10 per 1,000 searches; OpenAI: $10 or $25 per 1,000 calls by model), apart from tokens: what the
 * search brought into the context is already in the prompt count. Without that price they cost nothing.
 *
 * @module
 */

import { isTokenCount } from "../openai/usage_counts.ts";

/** Prices per million tokens; every class but input and output optional. */
export interface TokenPrices {
  readonly input: number;
  readonly output: number;
  readonly cached_input?: number;
  readonly cache_write_5m?: number;
  readonly cache_write_1h?: number;
  readonly reasoning?: number;
  /** Audio input tokens (within the prompt), where priced apart from text (gpt-4o-audio, gpt-realtime). */
  readonly audio_input?: number;
  /** Audio output tokens (within the completion), where priced apart from text. */
  readonly audio_output?: number;
  /** Dollars per 1,000 web searches the upstream ran (not per million tokens: the vendors price them per call). */
  readonly web_search_per_1k?: number;
  /** Rates above a prompt-size threshold (Gemini 2.5 Pro over 200k, Claude's 1M-context tier). */
  readonly long_context?: {
    readonly above: number;
    readonly input: number;
    readonly output: number;
    /** Default: `cached_input` scaled as the tier scales input (see the module doc); else the tier's input. */
    readonly cached_input?: number;
  };
}

/** A request's tokens by class; `prompt` and `completion` are the totals. */
export interface TokenClasses {
  prompt: number;
  completion: number;
  cachedRead?: number;
  cacheWrite5m?: number;
  cacheWrite1h?: number;
  reasoning?: number;
  /** Of the prompt, audio tokens. */
  audioInput?: number;
  /** Of the completion, audio tokens. */
  audioOutput?: number;
  /** Web searches the upstream ran (a count of calls, not tokens). */
  webSearches?: number;
}

/** A request's cost by class, in the price table's currency; `total` is their sum. */
export interface CostBreakdown {
  total: number;
  input: number;
  cached: number;
  cacheWrite: number;
  output: number;
  reasoning: number;
  webSearch: number;
}

export const ZERO_COST: Readonly<CostBreakdown> = Object.freeze({
  total: 0,
  input: 0,
  cached: 0,
  cacheWrite: 0,
  output: 0,
  reasoning: 0,
  webSearch: 0,
});

const count = (n: number | undefined) => (typeof n === "number" && Number.isFinite(n) && n > 0 ? n : 0);

/**
 * The rates (per million tokens) a request whose prompt is `prompt` tokens is charged at, class by class: the
 * long-context tier's above its threshold, each class's fallback where it has no rate of its own (see the module
 * doc). The one rule for which rate applies: settling ({@linkcode costOfUsage}) and the stream budget's weights
 * (lib/answer/budget_guard.ts, from the prompt's estimate) both read it.
 */
export interface TokenRates {
  readonly input: number;
  readonly cachedInput: number;
  readonly cacheWrite5m: number;
  readonly cacheWrite1h: number;
  readonly output: number;
  /** The reasoning rate where priced apart, else the output rate in force. */
  readonly reasoning: number;
  /** The audio rates where priced apart, else the text rates in force (audio is not tiered). */
  readonly audioInput: number;
  readonly audioOutput: number;
}

/** {@linkcode TokenRates} of `prices` for a prompt of `prompt` tokens. */
export function ratesAt(prices: TokenPrices, prompt: number): TokenRates {
  const tier = prices.long_context !== undefined && count(prompt) > prices.long_context.above
    ? prices.long_context
    : undefined;
  const input = tier?.input ?? prices.input;
  const output = tier?.output ?? prices.output;
  // The cache rates are shares of the input rate in force: the tier scales them as it scales input.
  const scale = tier === undefined || prices.input === 0 ? 1 : tier.input / prices.input;
  const scaled = (rate: number | undefined) => (rate === undefined ? undefined : rate * scale);
  const cacheWrite5m = scaled(prices.cache_write_5m) ?? input;
  return {
    input,
    cachedInput: tier?.cached_input ?? scaled(prices.cached_input) ?? input,
    cacheWrite5m,
    cacheWrite1h: scaled(prices.cache_write_1h) ?? cacheWrite5m,
    output,
    reasoning: prices.reasoning ?? output,
    audioInput: prices.audio_input ?? input,
    audioOutput: prices.audio_output ?? output,
  };
}

/** The cost of `usage` at `prices` (see the module doc for the arithmetic). */
export function costOfUsage(prices: TokenPrices | null | undefined, usage: TokenClasses): CostBreakdown {
  if (!prices) return { ...ZERO_COST };
  const prompt = count(usage.prompt);
  const completion = count(usage.completion);
  const rates = ratesAt(prices, prompt);
  const cached = Math.min(count(usage.cachedRead), prompt);
  const write5m = Math.min(count(usage.cacheWrite5m), prompt - cached);
  const write1h = Math.min(count(usage.cacheWrite1h), prompt - cached - write5m);
  const uncached = prompt - cached - write5m - write1h;
  const audioIn = prices.audio_input === undefined ? 0 : Math.min(count(usage.audioInput), uncached);
  const reasoning = prices.reasoning === undefined ? 0 : Math.min(count(usage.reasoning), completion);
  const audioOut = prices.audio_output === undefined
    ? 0
    : Math.min(count(usage.audioOutput), completion - reasoning);
  const perMillion = (tokens: number, rate: number) => (tokens * rate) / 1_000_000;
  const breakdown = {
    input: perMillion(uncached - audioIn, rates.input) + perMillion(audioIn, rates.audioInput),
    cached: perMillion(cached, rates.cachedInput),
    cacheWrite: perMillion(write5m, rates.cacheWrite5m) + perMillion(write1h, rates.cacheWrite1h),
    output: perMillion(completion - reasoning - audioOut, rates.output) +
      perMillion(audioOut, rates.audioOutput),
    reasoning: perMillion(reasoning, rates.reasoning),
    // Not tiered: a search costs the same whatever the prompt's size.
    webSearch: (Math.floor(count(usage.webSearches)) * (prices.web_search_per_1k ?? 0)) / 1_000,
  };
  return {
    total: breakdown.input + breakdown.cached + breakdown.cacheWrite + breakdown.output +
      breakdown.reasoning +
      breakdown.webSearch,
    ...breakdown,
  };
}

/** Two costs' sum, class by class (a request's attempts that each spent: embeddings' billed sub-calls). */
export function addCosts(a: CostBreakdown, b: CostBreakdown): CostBreakdown {
  return {
    total: a.total + b.total,
    input: a.input + b.input,
    cached: a.cached + b.cached,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    output: a.output + b.output,
    reasoning: a.reasoning + b.reasoning,
    webSearch: a.webSearch + b.webSearch,
  };
}

/** The token classes a chat-form `usage` reports (its `*_details`), with the totals given. */
export function tokenClassesOf(prompt: number, completion: number, usage: unknown): TokenClasses {
  const u = usage as
    | {
      prompt_tokens_details?: {
        cached_tokens?: unknown;
        cache_write_5m_tokens?: unknown;
        cache_write_1h_tokens?: unknown;
        audio_tokens?: unknown;
      };
      completion_tokens_details?: { reasoning_tokens?: unknown; audio_tokens?: unknown };
    }
    | null
    | undefined;
  // Upstream text: a negative or fractional count is no count (the one rule, lib/openai/usage_counts.ts).
  const num = (v: unknown) => (isTokenCount(v) ? v : undefined);
  const classes: TokenClasses = {
    prompt,
    completion,
    cachedRead: num(u?.prompt_tokens_details?.cached_tokens),
    cacheWrite5m: num(u?.prompt_tokens_details?.cache_write_5m_tokens),
    cacheWrite1h: num(u?.prompt_tokens_details?.cache_write_1h_tokens),
    reasoning: num(u?.completion_tokens_details?.reasoning_tokens),
  };
  // Audio only where reported (OpenAI's audio models), so usage without it keeps its shape.
  const audioInput = num(u?.prompt_tokens_details?.audio_tokens);
  const audioOutput = num(u?.completion_tokens_details?.audio_tokens);
  if (audioInput !== undefined) classes.audioInput = audioInput;
  if (audioOutput !== undefined) classes.audioOutput = audioOutput;
  return classes;
}
