/**
 * The cache's series: lookups by outcome, the store's state and the size gauges, read back from the text
 * the registry renders.
 */
import assert from "node:assert/strict";
import parseRaw from "parse-prometheus-text-format";
import { Registry } from "./registry.ts";
import { CacheMetrics } from "./cache_metrics.ts";

/** What parse-prometheus-text-format returns (it ships no types). */
interface ParsedFamily {
  name: string;
  metrics: { value?: string; labels?: Record<string, string> }[];
}
const parse = parseRaw as (text: string) => ParsedFamily[];

/** The samples of each family, as `label=value,…` → value (the empty string for a label-less sample). */
function samples(registry: Registry): Map<string, Map<string, number>> {
  const bare = registry.render().split("\n").filter((line) => !line.startsWith("#")).join("\n");
  const out = new Map<string, Map<string, number>>();
  for (const family of parse(bare)) {
    const series = out.get(family.name) ?? new Map<string, number>();
    for (const s of family.metrics) {
      const labels = Object.entries(s.labels ?? {}).sort().map(([k, v]) => `${k}=${v}`).join(",");
      series.set(labels, Number(s.value));
    }
    out.set(family.name, series);
  }
  return out;
}

function setup() {
  const registry = new Registry();
  const metrics = new CacheMetrics(registry, { maxSeries: 100 });
  return { registry, metrics };
}

Deno.test("cache metrics: every family is declared, with no samples before anything happens", () => {
  const { registry } = setup();
  const text = registry.render();
  for (
    const name of [
      "gateway_cache_hits_total",
      "gateway_cache_misses_total",
      "gateway_cache_bypass_total",
      "gateway_cache_store_errors_total",
      "gateway_cache_store_up",
      "gateway_cache_entries",
      "gateway_cache_bytes",
    ]
  ) {
    assert.match(text, new RegExp(`^# TYPE ${name} (counter|gauge)$`, "m"), name);
  }
  const s = samples(registry);
  assert.equal(s.get("gateway_cache_hits_total"), undefined);
  assert.equal(s.get("gateway_cache_misses_total"), undefined);
});

Deno.test("cache metrics: recordLookup counts each outcome in its own counter", () => {
  const { registry, metrics } = setup();
  metrics.recordLookup("chat", "hit");
  metrics.recordLookup("chat", "hit");
  metrics.recordLookup("chat", "hit_semantic");
  metrics.recordLookup("chat", "miss");
  metrics.recordLookup("other", "miss");
  metrics.recordLookup("other", "bypass");
  metrics.recordLookup("other", "bypass");
  metrics.recordLookup("other", "bypass");
  metrics.recordLookup("chat", "something-else");
  const s = samples(registry);
  assert.deepEqual(
    s.get("gateway_cache_hits_total"),
    new Map([["alias=chat,kind=exact", 2], ["alias=chat,kind=semantic", 1]]),
  );
  assert.deepEqual(s.get("gateway_cache_misses_total"), new Map([["alias=chat", 1], ["alias=other", 1]]));
  assert.deepEqual(s.get("gateway_cache_bypass_total"), new Map([["alias=other", 3]]));
  assert.equal(s.get("gateway_cache_store_errors_total")?.get("") ?? 0, 0, "lookups are not store errors");
});

Deno.test("cache metrics: watch sets the store up, and refresh copies the size source", () => {
  const { registry, metrics } = setup();
  let size = { entries: 3, bytes: 1_200 };
  metrics.watch(() => size);
  let s = samples(registry);
  assert.equal(s.get("gateway_cache_store_up")?.get(""), 1);
  assert.equal(s.get("gateway_cache_entries")?.get(""), 0, "not read before a refresh");
  metrics.refresh();
  s = samples(registry);
  assert.equal(s.get("gateway_cache_entries")?.get(""), 3);
  assert.equal(s.get("gateway_cache_bytes")?.get(""), 1_200);
  size = { entries: 5, bytes: 2_000 };
  metrics.refresh();
  s = samples(registry);
  assert.equal(s.get("gateway_cache_entries")?.get(""), 5);
  assert.equal(s.get("gateway_cache_bytes")?.get(""), 2_000);
  // the store going down and back is set by whoever watches its calls
  metrics.storeUp.set([], 0);
  metrics.storeErrors.inc([]);
  s = samples(registry);
  assert.equal(s.get("gateway_cache_store_up")?.get(""), 0);
  assert.equal(s.get("gateway_cache_store_errors_total")?.get(""), 1);
});

Deno.test("cache metrics: a source without a size, or no source, leaves the gauges untouched", () => {
  const { registry, metrics } = setup();
  // A label-less gauge renders 0 from the start, so "untouched" is 0 here. Note that store_up is 0 too until a
  // cache is watched: a gateway without any cache reports its cache store as down.
  metrics.refresh();
  let s = samples(registry);
  assert.equal(s.get("gateway_cache_entries")?.get(""), 0, "no source: nothing set");
  assert.equal(s.get("gateway_cache_bytes")?.get(""), 0);
  assert.equal(s.get("gateway_cache_store_up")?.get(""), 0);
  metrics.watch(() => undefined);
  metrics.refresh();
  s = samples(registry);
  assert.equal(s.get("gateway_cache_store_up")?.get(""), 1);
  assert.equal(s.get("gateway_cache_entries")?.get(""), 0, "a Redis store has no size");
  assert.equal(s.get("gateway_cache_bytes")?.get(""), 0);
  // a source that knew a size and then does not keeps the last values
  let size: { entries: number; bytes: number } | undefined = { entries: 2, bytes: 10 };
  metrics.watch(() => size);
  metrics.refresh();
  size = undefined;
  metrics.refresh();
  s = samples(registry);
  assert.equal(s.get("gateway_cache_entries")?.get(""), 2);
  assert.equal(s.get("gateway_cache_bytes")?.get(""), 10);
});
