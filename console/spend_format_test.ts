import assert from "node:assert/strict";
import { NONE } from "./format.ts";
import {
  alertSummary,
  formatBudgetUse,
  formatDelivery,
  formatPeriod,
  formatSpend,
  spendRatio,
} from "./spend_format.ts";

Deno.test("formatSpend: used / limit in the budget's unit with the share spent", () => {
  assert.equal(formatSpend({ unit: "tokens", used: 600, limit: 1000 }), "600 / 1,000 tokens (60%)");
  assert.equal(formatSpend({ unit: "tokens", used: 0, limit: 1000 }), "0 / 1,000 tokens (0%)");
  assert.equal(formatSpend({ unit: "cost", used: 12.5, limit: 25 }), "12.50 / 25.00 cost (50%)");
  assert.equal(formatSpend({ unit: "cost", used: 0.00123, limit: 1 }), "0.00123 / 1.00 cost (0.12%)");
  // An overdraft (a stream that could not be stopped) is shown as it is, past 100%.
  assert.equal(formatSpend({ unit: "tokens", used: 1250, limit: 1000 }), "1,250 / 1,000 tokens (125%)");
  assert.equal(
    formatSpend({ unit: "tokens", used: null, limit: 1000 }),
    `${NONE} / 1,000 tokens (counters unavailable)`,
  );
});

Deno.test("spendRatio: NaN when the counters are unknown or the limit is not positive", () => {
  assert.equal(spendRatio({ used: 250, limit: 1000 }), 0.25);
  assert.ok(Number.isNaN(spendRatio({ used: null, limit: 1000 })));
  assert.ok(Number.isNaN(spendRatio({ used: 5, limit: 0 })));
});

Deno.test("formatPeriod: the period's id and when it resets, in UTC", () => {
  assert.equal(
    formatPeriod({ period_id: "2026-11", resets_at: "2026-12-01T00:00:00.000Z" }),
    "2026-11, resets 2026-12-01 00:00:00 UTC",
  );
});

const base = { id: "alr_1", time: "2026-11-24T09:00:05.000Z" };

Deno.test("alertSummary: a budget threshold names who, the threshold, used / limit and the period", () => {
  assert.equal(
    alertSummary({
      ...base,
      type: "budget",
      scope: "token",
      name: "spender",
      unit: "tokens",
      used: 8000,
      limit: 10000,
      threshold: 80,
      period: { id: "2026-11", end: "2026-12-01T00:00:00.000Z" },
    }),
    "token spender reached 80% of its budget (8,000 / 10,000 tokens, 2026-11)",
  );
  assert.equal(
    alertSummary({
      ...base,
      type: "budget",
      scope: "end_user",
      name: "user-42",
      unit: "cost",
      used: 2.5,
      limit: 5,
      threshold: 50,
      period: { id: "2026-11-24", end: "2026-11-25T00:00:00.000Z" },
    }),
    "end user user-42 reached 50% of its budget (2.50 / 5.00 cost, 2026-11-24)",
  );
});

Deno.test("alertSummary: denials and ejections", () => {
  assert.equal(
    alertSummary({
      ...base,
      type: "denials",
      rule: "token.rpm",
      owner: "web-app",
      count: 20,
      minutes: 5,
      window_start: "2026-11-24T09:00:00.000Z",
    }),
    "token.rpm denied web-app more than 20 times within 5 minutes (from 2026-11-24 09:00:00 UTC)",
  );
  assert.equal(
    alertSummary({ ...base, type: "denials", rule: "team.budget", owner: "payments", count: 1, minutes: 1 }),
    `team.budget denied payments more than 1 time within 1 minute (from ${NONE})`,
  );
  assert.equal(
    alertSummary({
      ...base,
      type: "ejection",
      target: "flaky/always-fails",
      provider: "flaky",
      until: "2026-11-24T09:10:00.000Z",
      failures: 2,
    }),
    "target flaky/always-fails ejected after 2 failures, until 2026-11-24 09:10:00 UTC",
  );
  assert.equal(
    alertSummary({ ...base, type: "ejection", target: "gpt-4o", provider: "azure-eu", failures: 1 }),
    `target gpt-4o (azure-eu) ejected after 1 failure, until ${NONE}`,
  );
});

Deno.test("alertSummary: fields of the wrong type or an unknown type never break the line", () => {
  assert.equal(
    alertSummary({ ...base, type: "budget", name: { nested: true }, used: "many", period: null }),
    `budget {"nested":true} reached ${NONE} of its budget (${NONE} / ${NONE} tokens, ${NONE})`,
  );
  assert.equal(alertSummary({ ...base, type: "quota", bucket: "a" }), '{"bucket":"a"}');
});

Deno.test("formatDelivery: host, receiver index, status, attempts and the last error", () => {
  assert.equal(
    formatDelivery({ target: 0, host: "127.0.0.1:8080", status: "delivered", attempts: 1 }),
    "127.0.0.1:8080 (#0): delivered, 1 attempt",
  );
  assert.equal(
    formatDelivery({
      target: 2,
      host: "hooks.example.com",
      status: "failed",
      attempts: 4,
      error: "HTTP 500",
    }),
    "hooks.example.com (#2): failed, 4 attempts (HTTP 500)",
  );
  assert.equal(
    formatDelivery({ target: 1, host: "h", status: "pending", attempts: 0 }),
    "h (#1): pending, 0 attempts",
  );
});

Deno.test("formatBudgetUse: explain's budget line, money as money and tokens as counts", () => {
  const cost = { rule: "token.budget", unit: "cost", period: "day", limit: 5, used: 0.02700000000000001 };
  assert.equal(
    formatBudgetUse({ ...cost, remaining: 4.973 }),
    "token.budget: 0.027 of 5.00 cost this day (4.97 left)",
  );
  assert.equal(
    formatBudgetUse({
      rule: "team.budget",
      unit: "cost",
      period: "day",
      limit: 0.02,
      used: 0.009000000000000005,
      remaining: 0.010999999999999996,
      stop_streams: true,
    }),
    "team.budget: 0.009 of 0.02 cost this day (0.011 left, stops streams)",
  );
  assert.equal(
    formatBudgetUse({
      rule: "token.budget",
      unit: "tokens",
      period: "month",
      limit: 1000,
      used: 600,
      remaining: 400,
    }),
    "token.budget: 600 of 1,000 tokens this month (400 left)",
  );
  assert.equal(
    formatBudgetUse({ ...cost, used: null, remaining: null }),
    `token.budget: ${NONE} of 5.00 cost this day (${NONE} left)`,
  );
});
