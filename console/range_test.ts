import assert from "node:assert/strict";
import { bucketTime, rangeOf, rangeWindow, toSeries } from "./range.ts";

const NOW = Date.parse("2026-11-24T09:17:30Z");

Deno.test("each range picks a bucket that keeps charts between ~25 and ~170 points", () => {
  const hour = rangeWindow("1h", NOW);
  assert.equal(hour.bucket, "minute");
  assert.equal(hour.from, "2026-11-24T08:17:00.000Z");
  assert.equal(hour.to, "2026-11-24T09:18:00.000Z");
  assert.equal(hour.starts.length, 61);
  const day = rangeWindow("24h", NOW);
  assert.equal(day.bucket, "hour");
  assert.equal(day.from, "2026-11-23T09:00:00.000Z");
  assert.equal(day.to, "2026-11-24T10:00:00.000Z");
  assert.equal(day.starts.length, 25);
  assert.equal(rangeWindow("7d", NOW).starts.length, 169);
  const month = rangeWindow("30d", NOW);
  assert.equal(month.bucket, "day");
  assert.equal(month.from, "2026-10-25T00:00:00.000Z");
  assert.equal(month.starts.length, 31);
});

Deno.test("rangeOf falls back to 24h for unknown input", () => {
  assert.equal(rangeOf("7d"), "7d");
  assert.equal(rangeOf("toString"), "24h");
  assert.equal(rangeOf(null), "24h");
});

Deno.test("bucketTime reads hour, minute and day keys", () => {
  assert.equal(bucketTime("2026-11-24T09:00:00Z"), Date.parse("2026-11-24T09:00:00Z"));
  assert.equal(bucketTime("2026-11-24"), Date.parse("2026-11-24T00:00:00Z"));
  assert.ok(Number.isNaN(bucketTime(null)));
});

Deno.test("toSeries fills empty buckets and counts the ones with requests", () => {
  const window = rangeWindow("24h", NOW);
  const latency = { p50: 100, p90: 150, p99: 200 };
  const series = toSeries([
    {
      key: { hour: "2026-11-24T09:00:00Z" },
      requests: 4,
      total_tokens: 40,
      cost: 0.5,
      errors: 1,
      latency_ms: latency,
    },
    {
      key: { hour: "2026-11-24T07:00:00Z" },
      requests: 2,
      total_tokens: 10,
      cost: 0,
      errors: 0,
      latency_ms: latency,
    },
    { key: { hour: "garbage" }, requests: 9, total_tokens: 9, cost: 9, errors: 9, latency_ms: latency },
  ], window);
  assert.equal(series.x.length, 25);
  assert.equal(series.points, 2);
  assert.equal(series.requests.at(-1), 4);
  assert.equal(series.errorRate.at(-1), 25);
  assert.equal(series.requests.at(-3), 2);
  assert.equal(series.requests.reduce((a, b) => a + b, 0), 6);
  assert.equal(series.errorRate[0], null);
  assert.equal(series.x[0], Date.parse("2026-11-23T09:00:00Z") / 1000);
});
