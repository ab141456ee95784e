import assert from "node:assert/strict";
import parseRaw from "parse-prometheus-text-format";
import {
  Counter,
  escapeHelp,
  escapeLabelValue,
  formatValue,
  OVERFLOW_LABEL_VALUE,
  PROMETHEUS_CONTENT_TYPE,
  Registry,
} from "./registry.ts";

/** What parse-prometheus-text-format returns (it ships no types). */
interface ParsedSample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}
interface ParsedFamily {
  name: string;
  help: string;
  type: string;
  metrics: ParsedSample[];
}
const parse = parseRaw as (text: string) => ParsedFamily[];

/** A sample value as Prometheus reads it (`Number` alone does not know `+Inf`). */
function promNumber(text: string | undefined): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  return Number(text);
}

/**
 * Every sample line, by sample name, with its labels. The parser folds a labelled histogram's series into
 * one (it keeps only unlabelled `_sum`/`_count`), so for exact per-series values the comment lines are
 * dropped and each `_bucket`, `_sum` and `_count` is read as a family of its own.
 */
function samplesOf(text: string): Map<string, { labels: Record<string, string>; value: number }[]> {
  const bare = text.split("\n").filter((line) => !line.startsWith("#")).join("\n");
  const out = new Map<string, { labels: Record<string, string>; value: number }[]>();
  for (const family of parse(bare)) {
    const list = out.get(family.name) ?? [];
    for (const s of family.metrics) list.push({ labels: s.labels ?? {}, value: promNumber(s.value) });
    out.set(family.name, list);
  }
  return out;
}

function example(): Registry {
  const r = new Registry();
  const requests = r.counter("http_requests_total", "Requests by method and code.", ["method", "code"]);
  const inflight = r.gauge("in_flight", "Requests in flight.", []);
  const latency = r.histogram("latency_seconds", "Latency.", ["route"], [0.1, 1, 2.5]);
  requests.inc(["post", "200"], 3);
  requests.inc(["get", "200"]);
  requests.inc(["get", "404"], 2);
  inflight.inc([]);
  inflight.inc([], 4);
  inflight.dec([]);
  latency.observe(["/b"], 0.05);
  latency.observe(["/a"], 0.1); // on a bound: counted in that bucket (le is inclusive)
  latency.observe(["/a"], 0.5);
  latency.observe(["/a"], 7);
  return r;
}

const EXPECTED = `# HELP http_requests_total Requests by method and code.
# TYPE http_requests_total counter
http_requests_total{method="get",code="200"} 1
http_requests_total{method="get",code="404"} 2
http_requests_total{method="post",code="200"} 3
# HELP in_flight Requests in flight.
# TYPE in_flight gauge
in_flight 4
# HELP latency_seconds Latency.
# TYPE latency_seconds histogram
latency_seconds_bucket{route="/a",le="0.1"} 1
latency_seconds_bucket{route="/a",le="1"} 2
latency_seconds_bucket{route="/a",le="2.5"} 2
latency_seconds_bucket{route="/a",le="+Inf"} 3
latency_seconds_sum{route="/a"} 7.6
latency_seconds_count{route="/a"} 3
latency_seconds_bucket{route="/b",le="0.1"} 1
latency_seconds_bucket{route="/b",le="1"} 1
latency_seconds_bucket{route="/b",le="2.5"} 1
latency_seconds_bucket{route="/b",le="+Inf"} 1
latency_seconds_sum{route="/b"} 0.05
latency_seconds_count{route="/b"} 1
`;

Deno.test("render: exact exposition of a counter, a gauge and a labelled histogram", () => {
  assert.equal(example().render(), EXPECTED);
  assert.equal(PROMETHEUS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("render: output does not depend on the order label sets first appeared", () => {
  const a = new Registry();
  const b = new Registry();
  const ca = a.counter("c_total", "c", ["x", "y"]);
  const cb = b.counter("c_total", "c", ["x", "y"]);
  const sets: [string, string][] = [["b", "1"], ["a", "2"], ["a", "10"], ["B", "z"], ["é", ""]];
  for (const s of sets) ca.inc(s);
  for (const s of sets.slice().reverse()) cb.inc(s);
  assert.equal(a.render(), b.render());
  assert.match(a.render(), /c_total\{x="B",y="z"\} 1\nc_total\{x="a",y="10"\} 1\nc_total\{x="a",y="2"\} 1/);
});

Deno.test("render: the parser reads it back, with types, help and values", () => {
  const text = example().render();
  const families = parse(text);
  assert.deepEqual(families.map((f) => [f.name, f.type, f.help]), [
    ["http_requests_total", "COUNTER", "Requests by method and code."],
    ["in_flight", "GAUGE", "Requests in flight."],
    ["latency_seconds", "HISTOGRAM", "Latency."],
  ]);
  assert.deepEqual(families[0].metrics, [
    { value: "1", labels: { method: "get", code: "200" } },
    { value: "2", labels: { method: "get", code: "404" } },
    { value: "3", labels: { method: "post", code: "200" } },
  ]);
  assert.deepEqual(families[1].metrics, [{ value: "4" }]);
  const samples = samplesOf(text);
  assert.deepEqual(samples.get("latency_seconds_count"), [
    { labels: { route: "/a" }, value: 3 },
    { labels: { route: "/b" }, value: 1 },
  ]);
  assert.deepEqual(
    samples.get("latency_seconds_bucket")?.filter((s) => s.labels.route === "/a").map((
      s,
    ) => [s.labels.le, s.value]),
    [["0.1", 1], ["1", 2], ["2.5", 2], ["+Inf", 3]],
  );
});

Deno.test("render: an unlabelled histogram parses into buckets, sum and count", () => {
  const r = new Registry();
  const h = r.histogram("size_bytes", "Sizes.", [], [10, 100]);
  for (const v of [1, 10, 11, 100, 1000]) h.observe([], v);
  const [family] = parse(r.render());
  assert.deepEqual(family.metrics, [{
    buckets: { "10": "2", "100": "4", "+Inf": "5" },
    sum: "1122",
    count: "5",
  }]);
  assert.deepEqual(h.get([]), { count: 5, sum: 1122 });
});

Deno.test("escaping: label values and help text survive the round trip", () => {
  const r = new Registry();
  const nasty = 'C:\\dir\\"quoted"\nnext line } {, =';
  r.counter("esc_total", 'Help with \\ backslash,\nnewline and "quotes".', ["v"]).inc([nasty], 2);
  const text = r.render();
  assert.equal(
    text,
    '# HELP esc_total Help with \\\\ backslash,\\nnewline and "quotes".\n# TYPE esc_total counter\n' +
      'esc_total{v="C:\\\\dir\\\\\\"quoted\\"\\nnext line } {, ="} 2\n',
  );
  const [family] = parse(text);
  assert.equal(family.help, 'Help with \\ backslash,\nnewline and "quotes".');
  assert.deepEqual(family.metrics, [{ value: "2", labels: { v: nasty } }]);
  assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
  assert.equal(escapeHelp('a\\b"c\nd'), 'a\\\\b"c\\nd');
});

Deno.test("formatValue: special and fractional values in the text format's spelling", () => {
  assert.deepEqual(
    [Infinity, -Infinity, NaN, 0, -0, 1.5, 1e-7, 1e21, 1048576].map(formatValue),
    ["+Inf", "-Inf", "NaN", "0", "0", "1.5", "1e-7", "1e+21", "1048576"],
  );
  const r = new Registry();
  const g = r.gauge("g", "g", ["k"]);
  g.set(["inf"], Infinity);
  g.set(["small"], 1e-7);
  g.set(["neg"], -2.25);
  const values = parse(r.render())[0].metrics.map((m) => [m.labels?.k, promNumber(m.value)]);
  assert.deepEqual(values, [["inf", Infinity], ["neg", -2.25], ["small", 1e-7]]);
});

Deno.test("histogram: buckets are cumulative and +Inf equals the count", () => {
  const r = new Registry();
  const h = r.histogram("h", "h", ["k"], [1, 2, 4, 8]);
  const observed = [0, 1, 1.5, 2, 3, 5, 8, 9, 100, -1];
  for (const v of observed) h.observe(["x"], v);
  const buckets = samplesOf(r.render()).get("h_bucket")!.map((s) => [s.labels.le, s.value]);
  assert.deepEqual(buckets, [["1", 3], ["2", 5], ["4", 6], ["8", 8], ["+Inf", 10]]);
  for (let i = 1; i < buckets.length; i++) assert.ok(Number(buckets[i][1]) >= Number(buckets[i - 1][1]));
  assert.deepEqual(h.get(["x"]), { count: 10, sum: observed.reduce((a, b) => a + b, 0) });
  assert.throws(() => h.observe(["x"], NaN), RangeError);
});

Deno.test("validation: names, labels, buckets, duplicates, arity and negative increments", () => {
  const r = new Registry();
  assert.throws(() => r.counter("1bad", "h", []), TypeError);
  assert.throws(() => r.counter("bad-name", "h", []), TypeError);
  assert.throws(() => r.counter("ok_total", "h", ["bad-label"]), TypeError);
  assert.throws(() => r.counter("ok_total", "h", ["__reserved"]), TypeError);
  assert.throws(() => r.counter("ok_total", "h", ["a", "a"]), TypeError);
  assert.throws(() => r.histogram("h1", "h", ["le"], [1]), TypeError);
  assert.throws(() => r.histogram("h2", "h", [], []), RangeError);
  assert.throws(() => r.histogram("h3", "h", [], [2, 1]), RangeError);
  assert.throws(() => r.histogram("h4", "h", [], [1, Infinity]), RangeError);
  r.histogram("dur", "h", [], [1]);
  assert.throws(() => r.counter("dur", "h", []), TypeError);
  assert.throws(() => r.gauge("dur_count", "h", []), TypeError);
  const c = r.counter("c_total", "h", ["a", "b"]);
  assert.throws(() => c.inc(["only one"] as unknown as [string, string]), TypeError);
  assert.throws(() => c.inc(["x", "y"], -1), RangeError);
  assert.throws(() => c.inc(["x", "y"], NaN), RangeError);
  c.inc(["x", "y"], 0);
  assert.equal(c.get(["x", "y"]), 0);
  // Metric names may hold colons (recording-rule style); label names may not.
  r.counter("job:requests:rate", "h", []);
  assert.throws(() => r.counter("x_total", "h", ["a:b"]), TypeError);
});

Deno.test("maxSeries: label sets past the cap fold into one overflow series, totals intact", () => {
  const r = new Registry();
  const c = r.counter("capped_total", "h", ["id", "kind"], { maxSeries: 3 });
  for (let i = 0; i < 100; i++) c.inc([`id-${i}`, "k"], 2);
  assert.equal(c.seriesCount, 4);
  assert.equal(c.get([OVERFLOW_LABEL_VALUE, OVERFLOW_LABEL_VALUE]), 194);
  const samples = samplesOf(r.render()).get("capped_total")!;
  assert.equal(samples.length, 4);
  assert.equal(samples.reduce((sum, s) => sum + s.value, 0), 200);
});

Deno.test("a reused values array is copied, not kept", () => {
  const c = new Counter("reuse_total", "h", ["a"]);
  const scratch: [string] = ["one"];
  c.inc(scratch);
  scratch[0] = "two";
  c.inc(scratch);
  assert.equal(c.get(["one"]), 1);
  assert.equal(c.get(["two"]), 1);
});

Deno.test("render: a labelled metric with no series yet still shows HELP and TYPE and parses", () => {
  const r = new Registry();
  r.counter("empty_total", "Nothing yet.", ["a"]);
  r.gauge("up", "Up.", []).set([], 1);
  const text = r.render();
  assert.equal(
    text,
    "# HELP empty_total Nothing yet.\n# TYPE empty_total counter\n# HELP up Up.\n# TYPE up gauge\nup 1\n",
  );
  assert.deepEqual(parse(text).map((f) => [f.name, f.metrics.length]), [["empty_total", 0], ["up", 1]]);
  assert.equal(new Registry().render(), "");
});
