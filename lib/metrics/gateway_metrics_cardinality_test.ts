/** The gateway metrics' label cardinality: error codes past a bound, enums outside their sets, odd values. */
import assert from "node:assert/strict";
import type { PolicyOutcome } from "../usage/record.ts";
import { GatewayMetrics, KNOWN_ERROR_CODES, OTHER } from "./gateway_metrics.ts";
import { record, samplesOf, sorted, sumBy } from "./gateway_metrics_test_helpers.ts";

Deno.test("cardinality: 1,000 distinct error codes leave a bounded set of label values", () => {
  const metrics = new GatewayMetrics({ maxErrorCodes: 50 });
  for (let i = 0; i < 1000; i++) {
    metrics.recordRequest(record({ status: 502, error_code: `weird_upstream_code_${i}` }));
    metrics.recordAttempt({ provider: "local", model: "echo", outcome: `other_code_${i}`, latency_ms: 10 });
  }
  metrics.recordRequest(record({ status: 504, error_code: "upstream_timeout" }));
  metrics.recordRequest(record({ status: 502, error_code: "x".repeat(65) }));
  metrics.recordRequest(record({ status: 502, error_code: "has space\nand newline" }));
  const s = samplesOf(metrics.render());
  const errorTypes = sumBy(s, "gen_ai_client_operation_duration_seconds_count", ["error_type"]);
  const failureOutcomes = sumBy(s, "gateway_upstream_failures_total", ["outcome"]);
  // 50 distinct codes are shared by both metrics; the rest read _OTHER, and totals stay whole.
  assert.equal(errorTypes.size + failureOutcomes.size, 50 + 2 + 1);
  assert.equal(errorTypes.get(OTHER), 1000 - 25 + 2);
  assert.equal(errorTypes.get("upstream_timeout"), 1, "known codes always pass");
  assert.equal([...errorTypes.values()].reduce((a, b) => a + b, 0), 1003);
  assert.equal(failureOutcomes.get(OTHER), 1000 - 25);
  assert.equal([...failureOutcomes.values()].reduce((a, b) => a + b, 0), 1000);
  for (const code of KNOWN_ERROR_CODES) assert.equal(metrics.errorLabel(code), code);
  assert.equal(metrics.errorLabel(null), "");
});

Deno.test("cardinality: enums outside their sets and odd numbers are folded, not passed through", () => {
  const metrics = new GatewayMetrics();
  metrics.recordRequest(
    record({ endpoint: "/v1/secret?x=1", status: 1234, outcome: "maybe" as PolicyOutcome }),
  );
  metrics.recordRequest(
    record({ latency_ms: NaN, cost: -5, prompt_tokens: Infinity, completion_tokens: -1 }),
  );
  const requests = sumBy(samplesOf(metrics.render()), "gateway_requests_total", [
    "endpoint",
    "status",
    "outcome",
  ]);
  assert.deepEqual(sorted(requests), [["chat|200|allow", 1], [`other|${OTHER}|${OTHER}`, 1]]);
  assert.equal(metrics.operationDuration.get(["chat", "chat-default", "local", ""]).count, 0, "NaN latency");
  assert.equal(metrics.operationDuration.seriesCount, 0, "reading a value creates no series");
  assert.equal(metrics.cost.get(["chat-default", "local"]), 0.001);
});
