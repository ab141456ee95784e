import assert from "node:assert/strict";
import { formatDuration, rateLimitHeaders } from "./ratelimit_headers.ts";

Deno.test("formatDuration writes durations the way OpenAI does", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [-5, "0s"],
    [0.2, "1ms"],
    [12, "12ms"],
    [999, "999ms"],
    [1000, "1s"],
    [1200, "1.2s"],
    [17_295, "17.295s"],
    [59_990, "59.99s"],
    [60_000, "1m0s"],
    [360_000, "6m0s"],
    [90_500, "1m30.5s"],
    [3_723_500, "1h2m3.5s"],
    [7_200_000, "2h0m0s"],
  ];
  for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, `${ms}`);
});

Deno.test("rateLimitHeaders: the limit with the fewest remaining of each kind", () => {
  assert.deepEqual(
    rateLimitHeaders([
      { kind: "requests", limit: 100, remaining: 99, resetMs: 600 },
      { kind: "requests", limit: 10, remaining: 9, resetMs: 6_000 },
      { kind: "tokens", limit: 10_000, remaining: 5_000, resetMs: 30_000 },
      { kind: "tokens", limit: 100_000, remaining: 99_000, resetMs: 600 },
    ]),
    {
      "x-ratelimit-limit-requests": "10",
      "x-ratelimit-remaining-requests": "9",
      "x-ratelimit-reset-requests": "6s",
      "x-ratelimit-limit-tokens": "10000",
      "x-ratelimit-remaining-tokens": "5000",
      "x-ratelimit-reset-tokens": "30s",
    },
  );
});

Deno.test("rateLimitHeaders: ties go to the lower limit; only kinds that apply; nothing when none apply", () => {
  assert.deepEqual(
    rateLimitHeaders([
      { kind: "tokens", limit: 500, remaining: 0, resetMs: 1_000 },
      { kind: "tokens", limit: 200, remaining: 0, resetMs: 12 },
    ]),
    {
      "x-ratelimit-limit-tokens": "200",
      "x-ratelimit-remaining-tokens": "0",
      "x-ratelimit-reset-tokens": "12ms",
    },
  );
  assert.deepEqual(rateLimitHeaders([]), {});
});
