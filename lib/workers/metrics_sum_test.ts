import assert from "node:assert/strict";
import { Registry } from "../metrics/registry.ts";
import { sumExpositions } from "./metrics_sum.ts";

function worker(requests: number, latencies: number[], extra?: (r: Registry) => void): string {
  const r = new Registry();
  const c = r.counter("gateway_requests_total", "Requests.", ["endpoint"]);
  if (requests > 0) c.inc(["chat"], requests);
  const h = r.histogram("gateway_latency_seconds", "Latency.", ["endpoint"], [0.1, 1]);
  for (const l of latencies) h.observe(["chat"], l);
  extra?.(r);
  return r.render();
}

Deno.test("metrics_sum: counters and histogram buckets add up sample by sample", () => {
  const summed = sumExpositions([worker(3, [0.05, 0.5]), worker(4, [2])]);
  const lines = summed.split("\n");
  assert.ok(lines.includes('gateway_requests_total{endpoint="chat"} 7'));
  assert.ok(lines.includes('gateway_latency_seconds_bucket{endpoint="chat",le="0.1"} 1'));
  assert.ok(lines.includes('gateway_latency_seconds_bucket{endpoint="chat",le="1"} 2'));
  assert.ok(lines.includes('gateway_latency_seconds_bucket{endpoint="chat",le="+Inf"} 3'));
  assert.ok(lines.includes('gateway_latency_seconds_count{endpoint="chat"} 3'));
  assert.ok(lines.includes('gateway_latency_seconds_sum{endpoint="chat"} 2.55'));
  // HELP and TYPE once per family.
  assert.equal(lines.filter((l) => l === "# TYPE gateway_requests_total counter").length, 1);
});

Deno.test("metrics_sum: a series or family only one worker has is kept, in its family", () => {
  const a = worker(1, [], (r) => r.gauge("gateway_tokens_loaded", "Loaded.", []).set([], 5));
  const b = worker(0, []);
  const summed = sumExpositions([b, a, b]);
  const lines = summed.split("\n");
  assert.ok(lines.includes('gateway_requests_total{endpoint="chat"} 1'));
  assert.ok(lines.includes("gateway_tokens_loaded 5"));
  const family = lines.indexOf("# TYPE gateway_requests_total counter");
  assert.equal(lines[family + 1], 'gateway_requests_total{endpoint="chat"} 1');
  assert.ok(summed.endsWith("\n"));
  assert.equal(sumExpositions([]), "");
});

Deno.test("metrics_sum: an *_up gauge several workers keep is up only where every worker is up", () => {
  const worker = (up: number) =>
    `# HELP gateway_cache_store_up 1 when the store answers.\n# TYPE gateway_cache_store_up gauge\ngateway_cache_store_up ${up}\n`;
  assert.match(sumExpositions([worker(1), worker(1), worker(1)]), /^gateway_cache_store_up 1$/m);
  assert.match(sumExpositions([worker(1), worker(0), worker(1)]), /^gateway_cache_store_up 0$/m);
});

Deno.test("metrics_sum: the primary's *_up gauge of a store only the workers keep is left out; its own stores' count", () => {
  const up = (name: string, value: number) =>
    `# HELP ${name} 1 when up.\n# TYPE ${name} gauge\n${name} ${value}\n`;
  // The primary has no cache (its gauge says 0); it keeps the usage store, which no worker has.
  const primary = up("gateway_cache_store_up", 0) + up("gateway_usage_store_up", 1);
  const summed = sumExpositions([up("gateway_cache_store_up", 1), up("gateway_cache_store_up", 1)], primary);
  assert.match(summed, /^gateway_cache_store_up 1$/m);
  assert.match(summed, /^gateway_usage_store_up 1$/m);
  assert.equal(summed.match(/# TYPE gateway_cache_store_up/g)?.length, 1);
  const down = sumExpositions([up("gateway_cache_store_up", 1), up("gateway_cache_store_up", 0)], primary);
  assert.match(down, /^gateway_cache_store_up 0$/m);
  assert.match(sumExpositions([], up("gateway_usage_store_up", 0)), /^gateway_usage_store_up 0$/m);
});
