import assert from "node:assert/strict";
import {
  axisMs,
  axisNumber,
  formatBudget,
  formatCost,
  formatCostClasses,
  formatCostShares,
  formatCount,
  formatGuardrailOutcome,
  formatHitRate,
  formatLimits,
  formatMs,
  formatPercent,
  formatStoreState,
  formatTime,
  formatTokenCache,
  formatValue,
  NONE,
  shortTeamId,
  shortTokenId,
  shortTraceId,
  teamNamesOf,
  tokenRowNames,
} from "./format.ts";

Deno.test("formatCount groups thousands and shows missing values as a dash", () => {
  assert.equal(formatCount(1234567), "1,234,567");
  assert.equal(formatCount(0), "0");
  assert.equal(formatCount(null), NONE);
  assert.equal(formatCount(Number.NaN), NONE);
});

Deno.test("formatCost never shows a cheap request as zero", () => {
  assert.equal(formatCost(0), "0");
  assert.equal(formatCost(0.000123456), "0.000123");
  assert.equal(formatCost(0.5), "0.5");
  assert.equal(formatCost(12.5), "12.50");
  assert.equal(formatCost(undefined), NONE);
});

Deno.test("formatPercent and formatMs", () => {
  assert.equal(formatPercent(0.125), "12.5%");
  assert.equal(formatPercent(0), "0%");
  assert.equal(formatPercent(0 / 0), NONE);
  assert.equal(formatMs(42.4), "42 ms");
  assert.equal(formatMs(1530), "1.53 s");
  assert.equal(formatMs(null), NONE);
});

Deno.test("formatTime shows UTC and passes through what it cannot parse", () => {
  assert.equal(formatTime("2026-11-24T09:00:05.123Z"), "2026-11-24 09:00:05 UTC");
  assert.equal(formatTime("2026-11-24T10:00:05+01:00"), "2026-11-24 09:00:05 UTC");
  assert.equal(formatTime("soon"), "soon");
  assert.equal(formatTime(null), NONE);
});

Deno.test("formatLimits and formatBudget name each part", () => {
  assert.equal(formatLimits({ rpm: 60, tpm: 100000, concurrent: 4 }), "60 rpm · 100,000 tpm · 4 concurrent");
  assert.equal(formatLimits({}), NONE);
  assert.equal(formatLimits(null), NONE);
  assert.equal(formatBudget({ tokens: 1000000, period: "month" }), "1,000,000 tokens / month");
  assert.equal(formatBudget({ cost: 25, period: "day" }), "25.00 cost / day");
  assert.equal(formatBudget(null), NONE);
});

Deno.test("formatStoreState says which store, whether it answers, and what follows when it does not", () => {
  assert.equal(formatStoreState({ store: "memory", ok: true }), "memory: ok");
  assert.equal(
    formatStoreState({ store: "redis", ok: false, on_failure: "fail_open" }),
    "redis: failing (limited requests: fail_open)",
  );
  // on_failure is what limited requests get while Redis is away: not shown while it answers.
  assert.equal(formatStoreState({ store: "redis", ok: true, on_failure: "fail_closed" }), "redis: ok");
  assert.equal(
    formatStoreState({ store: "postgres", ok: true, spilling: true }),
    "postgres: ok, spilling to file",
  );
  assert.equal(
    formatStoreState({ store: "sqlite", ok: false, spilling: true }),
    "sqlite: failing, spilling to file",
  );
  assert.equal(formatStoreState(null), "none");
  assert.equal(formatStoreState(undefined), "not reported");
});

Deno.test("formatTokenCache shows false as off and an object as its directives", () => {
  assert.equal(formatTokenCache(false), "off");
  assert.equal(formatTokenCache(null), NONE);
  assert.equal(formatTokenCache({ no_store: false, no_cache: false }), NONE);
  assert.equal(
    formatTokenCache({ no_store: true, no_cache: true, max_age: 600_000 }),
    "no-store · no-cache · max-age 600 s",
  );
});

Deno.test("axisNumber keeps ticks short", () => {
  assert.equal(axisNumber(0.5), "0.5");
  assert.equal(axisNumber(1), "1");
  assert.equal(axisNumber(0.123456), "0.123");
  assert.equal(axisNumber(12500), "12,500");
  // Small amounts (a bucket's cost) in full, not as 1.5e-7, and without a float's noise.
  assert.equal(axisNumber(0.00000015), "0.00000015");
  assert.equal(axisNumber(0.00030000000000000003), "0.0003");
  assert.equal(axisNumber(0), "0");
  assert.equal(axisMs(0.5), "0.5 ms");
  assert.equal(axisMs(1500), "1.5 s");
});

Deno.test("formatValue", () => {
  assert.equal(formatValue(null), "none");
  assert.equal(formatValue("staging"), "staging");
  assert.equal(formatValue({ rpm: 60 }), '{"rpm":60}');
});

Deno.test("formatHitRate is hits over lookups, and a dash when nothing looked the cache up", () => {
  assert.equal(formatHitRate({ cache_hits: 1, cache_lookups: 4 }), "25%");
  assert.equal(formatHitRate({ cache_hits: 0, cache_lookups: 3 }), "0%");
  assert.equal(formatHitRate({ cache_hits: 2, cache_lookups: 3 }), "66.67%");
  assert.equal(formatHitRate({ cache_hits: 0, cache_lookups: 0 }), NONE);
});

Deno.test("shortTraceId keeps the first 8 hex digits of a trace id, and short text whole", () => {
  assert.equal(shortTraceId("4bf92f3577b34da6a3ce929d0e0e4736"), "4bf92f35…");
  assert.equal(shortTraceId("4bf92f35"), "4bf92f35");
  assert.equal(shortTraceId(""), "");
});

Deno.test("formatGuardrailOutcome names the guardrail, phase, action and the types found", () => {
  assert.equal(
    formatGuardrailOutcome({ name: "pii", phase: "input", action: "mask", types: ["email", "phone"] }),
    "pii: input mask (email, phone)",
  );
  assert.equal(
    formatGuardrailOutcome({ name: "mod", phase: "output", action: "flag", types: [] }),
    "mod: output flag",
  );
  assert.equal(
    formatGuardrailOutcome({ name: "mod", phase: "input", action: "error", error: "timed out" }),
    "mod: input error — timed out",
  );
});

Deno.test("a cost's split: every class in the tooltip, only the non-zero shares in the summary line", () => {
  const split = {
    cost_input: 0.01,
    cost_cached: 0.002,
    cost_cache_write: 0,
    cost_output: 0.03,
    cost_reasoning: 0.5,
  };
  assert.equal(
    formatCostClasses(split),
    "input 0.01 · cached 0.002 · cache writes 0 · output 0.03 · reasoning 0.5",
  );
  assert.equal(formatCostShares(split), "of which cached 0.002 · reasoning 0.5");
  assert.equal(formatCostShares({ cost_input: 1, cost_output: 2, cost_cached: 0 }), "");
  assert.equal(formatCostClasses({}), "input 0 · cached 0 · cache writes 0 · output 0 · reasoning 0");
  // Web searches, priced per search, show where a request ran some.
  const searched = { ...split, cost_web_search: 0.02 };
  assert.equal(
    formatCostClasses(searched),
    "input 0.01 · cached 0.002 · cache writes 0 · output 0.03 · reasoning 0.5 · web search 0.02",
  );
  assert.equal(formatCostShares(searched), "of which cached 0.002 · reasoning 0.5 · web search 0.02");
});

Deno.test("tokenRowNames: a row per token, its name, and the short id where two rows share a name", () => {
  assert.equal(shortTokenId("tok_0123456789abcdef01234567"), "tok_01234567…");
  assert.equal(shortTokenId("cfg_ci-bot"), "cfg_ci-bot");
  assert.deepEqual(
    tokenRowNames([
      { token_id: "tok_0123456789abcdef01234567", token: "reissued" },
      { token_id: "cfg_ci-bot", token: "ci-bot" },
      { token_id: "tok_fedcba9876543210fedcba98", token: "reissued" },
      { token_id: "tok_aaaaaaaaaaaaaaaaaaaaaaaa", token: null },
    ]),
    ["reissued · tok_01234567…", "ci-bot", "reissued · tok_fedcba98…", "tok_aaaaaaaa…"],
  );
});

Deno.test("teamNamesOf: a row per team by its name, the short id where two share one, the id where none is said", () => {
  assert.equal(shortTeamId("tm_0123456789abcdef01234567"), "tm_01234567…");
  assert.equal(shortTeamId("team_payments"), "team_payments");
  const names = teamNamesOf([
    { key: { team_id: null, team: null } },
    { key: { team_id: "team_payments", team: "payments" } },
    // A team deleted and one made under its name: two rows of one name.
    { key: { team_id: "tm_0123456789abcdef01234567", team: "growth" } },
    { key: { team_id: "tm_fedcba9876543210fedcba98", team: "growth" } },
    // Records that name no team (a gateway before names were reported): the id, whole.
    { key: { team_id: "team_legacy" } },
  ]);
  assert.deepEqual([...names], [
    ["team_payments", "payments"],
    ["tm_0123456789abcdef01234567", "growth · tm_01234567…"],
    ["tm_fedcba9876543210fedcba98", "growth · tm_fedcba98…"],
    ["team_legacy", "team_legacy"],
  ]);
});
