import assert from "node:assert/strict";
import { canonicalTime, emptyTotals, groupKeysOf, percentile, UsageQueryError, whereOf } from "./query.ts";

Deno.test("query: nearest-rank percentile", () => {
  assert.equal(percentile([], 50), null);
  assert.equal(percentile([7], 99), 7);
  const xs = Array.from({ length: 10 }, (_, i) => i + 1);
  assert.equal(percentile(xs, 50), 5);
  assert.equal(percentile(xs, 90), 9);
  assert.equal(percentile(xs, 99), 10);
  assert.equal(percentile([1, 2, 3], 50), 2);
});

Deno.test("query: group keys come from the allow-list only", () => {
  assert.deepEqual(groupKeysOf(["hour", "token", "hour"]), ["hour", "token"]);
  assert.deepEqual(groupKeysOf(undefined), []);
  assert.throws(() => groupKeysOf(["time"]), UsageQueryError);
  assert.throws(() => groupKeysOf(["__proto__"]), UsageQueryError);
});

Deno.test("query: filters become parameters, never SQL text", () => {
  const w = whereOf({ token: "a'b", from: "2025-01-01", outcome: "deny" });
  assert.equal(w.sql, "1=1 AND time >= ? AND token = ? AND outcome = ?");
  assert.deepEqual(w.params, ["2025-01-01T00:00:00.000Z", "a'b", "deny"]);
  assert.equal(canonicalTime("2025-01-01T02:00:00+02:00"), "2025-01-01T00:00:00.000Z");
  assert.throws(
    () => canonicalTime("soon", "to"),
    (e: unknown) => e instanceof UsageQueryError && e.param === "to",
  );
});

Deno.test("query: totals over no records have every field, the cache's included, at zero", () => {
  assert.deepEqual(emptyTotals(), {
    requests: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
    cost: 0,
    denials: {},
    errors: 0,
    cache_hits: 0,
    cache_lookups: 0,
    saved_tokens: 0,
    saved_cost: 0,
    cost_input: 0,
    cost_cached: 0,
    cost_cache_write: 0,
    cost_output: 0,
    cost_reasoning: 0,
    cost_web_search: 0,
    latency_ms: { p50: null, p90: null, p99: null },
  });
});
