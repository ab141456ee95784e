/**
 * Google's error shape and the `details` Gemini CLI decides a retry by: a rate limit's wait (RetryInfo), a spent
 * budget's period and reset (QuotaFailure, RetryInfo), a Google upstream's own details passed on, scrubbed.
 */
import assert from "node:assert/strict";
import { GatewayError, type QuotaReset, scrubError } from "./errors.ts";
import { googleErrorBody } from "./google_errors.ts";
import { createScrubber } from "./secrets/scrubber.ts";

const NOW = Date.UTC(2031, 4, 17, 18, 30, 0);
const RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo";
const QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure";

Deno.test("google errors: a client mistake has no details", () => {
  const body = googleErrorBody(new GatewayError(400, "bad", { headers: { "retry-after": "5" } }), NOW);
  assert.deepEqual(body, { error: { code: 400, message: "bad", status: "INVALID_ARGUMENT" } });
});

Deno.test("google errors: a 429 or 503 with a wait in its headers says it as a RetryInfo", () => {
  const cases: [number, Record<string, string>, string | undefined][] = [
    [429, { "retry-after": "60", "retry-after-ms": "59966" }, "59.966s"],
    [429, { "retry-after": "7" }, "7s"],
    [503, { "retry-after": new Date(NOW + 30_000).toUTCString() }, "30s"],
    [429, { "retry-after": "soon" }, undefined],
    [429, {}, undefined],
    [502, { "retry-after": "7" }, undefined],
  ];
  for (const [status, headers, delay] of cases) {
    const body = googleErrorBody(new GatewayError(status, "wait", { headers }), NOW);
    const expected = delay === undefined ? undefined : [{ "@type": RETRY_INFO, retryDelay: delay }];
    assert.deepEqual(body.error.details, expected, JSON.stringify([status, headers]));
  }
});

Deno.test("google errors: a spent budget is a QuotaFailure of its period and a RetryInfo until its reset", () => {
  const day: QuotaReset = {
    scope: "token",
    unit: "tokens",
    limit: 1000,
    period: "day",
    resetsAt: NOW + 5.5 * 3600_000,
  };
  const denied = new GatewayError(429, "You exceeded your current quota", {
    type: "insufficient_quota",
    headers: { "x-should-retry": "false" },
    quota: day,
  });
  assert.deepEqual(googleErrorBody(denied, NOW).error.details, [
    {
      "@type": QUOTA_FAILURE,
      violations: [{
        quotaMetric: "gateway/budget_tokens",
        quotaId: "TokenBudgetPerDay",
        quotaValue: "1000",
      }],
    },
    { "@type": RETRY_INFO, retryDelay: "19800s" },
  ]);
  const month = { ...day, scope: "end_user", unit: "cost", limit: 12.5, period: "month" } as const;
  const details = googleErrorBody(new GatewayError(429, "spent", { quota: month }), NOW).error.details!;
  assert.equal((details[0].violations as { quotaId: string }[])[0].quotaId, "EndUserBudgetPerMonth");
  assert.equal((details[0].violations as { quotaValue: string }[])[0].quotaValue, "12.5");
});

Deno.test("google errors: an upstream's own details are passed on, before what the gateway adds; scrubbed", () => {
  const key = "AIzaSy-upstream-Q2w3E4r5T6y7U8i9";
  const upstream = [
    { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "RATE_LIMIT_EXCEEDED", metadata: { key } },
    { "@type": RETRY_INFO, retryDelay: "33s" },
  ];
  const raw = new GatewayError(429, "You exceeded your current quota.", {
    headers: { "retry-after": "33" },
    googleDetails: upstream,
  });
  // Its own RetryInfo is the one said, not another made of the header.
  assert.deepEqual(googleErrorBody(raw, NOW).error.details, upstream);
  const clean = scrubError(raw, createScrubber([key]));
  assert.ok(!JSON.stringify(googleErrorBody(clean, NOW)).includes("Q2w3E4r5"));
  assert.deepEqual(clean.googleDetails?.[1], { "@type": RETRY_INFO, retryDelay: "33s" });
});
