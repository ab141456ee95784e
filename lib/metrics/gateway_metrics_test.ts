import assert from "node:assert/strict";
import type { AttemptRecord } from "../routing/route.ts";
import type { PolicyOutcome, UsageRecord } from "../usage/record.ts";
import { GatewayMetrics } from "./gateway_metrics.ts";
import { parse, record, samplesOf, sorted, sumBy } from "./gateway_metrics_test_helpers.ts";

function tally(keys: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const k of keys) out.set(k, (out.get(k) ?? 0) + 1);
  return out;
}

function addTo(map: Map<string, number>, key: string, n: number): void {
  map.set(key, (map.get(key) ?? 0) + n);
}

/** A small seeded generator (mulberry32), so the data set is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** ~200 varied records and their attempts: allowed, denied by several rules, modified, errors, streams. */
function dataset(): { records: UsageRecord[]; attempts: AttemptRecord[] } {
  const rand = seeded(42);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const records: UsageRecord[] = [];
  const attempts: AttemptRecord[] = [];
  for (let i = 0; i < 200; i++) {
    const alias = pick(["chat-default", "chat-fast", "embed-default", null] as const);
    const endpoint = alias === null
      ? pick(["chat", "models", "other"])
      : alias.startsWith("embed")
      ? "embeddings"
      : "chat";
    const roll = rand();
    let outcome: PolicyOutcome = "allow";
    let rule: string | null = null;
    let status = 200;
    let error_code: string | null = null;
    let provider: string | null = alias === null ? null : pick(["openai", "local", "anthropic"]);
    if (alias === null) {
      status = endpoint === "models" ? 200 : 404;
      error_code = status === 404 ? (endpoint === "chat" ? "model_not_found" : "unknown_url") : null;
    } else if (roll < 0.2) {
      outcome = "deny";
      rule = pick(["token.rpm", "token.budget", "alias.content:pii"]);
      status = rule === "alias.content:pii" ? 400 : 429;
      error_code = rule === "alias.content:pii" ? "content_filter" : "rate_limit_exceeded";
      provider = null;
    } else if (roll < 0.3) {
      outcome = "modify";
      rule = "alias.content:redact";
    } else if (roll < 0.4) {
      status = pick([502, 503, 504]);
      error_code = status === 504 ? "upstream_timeout" : status === 503 ? "upstream_overloaded" : null;
    }
    const ok = status < 400 && provider !== null;
    const stream = endpoint === "chat" && rand() < 0.5;
    records.push(record({
      alias,
      provider,
      endpoint,
      status,
      outcome,
      rule,
      error_code,
      stream,
      prompt_tokens: ok ? 1 + Math.floor(rand() * 5000) : 0,
      completion_tokens: ok && endpoint === "chat" ? Math.floor(rand() * 800) : 0,
      cost: ok ? Math.round(rand() * 1e6) / 1e8 : 0,
      latency_ms: 1 + rand() * 30_000,
      ttft_ms: stream && ok ? rand() * 3000 : null,
    }));
    if (provider !== null && outcome !== "deny") {
      const failures = Math.floor(rand() * 3);
      for (let f = 0; f < failures; f++) {
        attempts.push({
          provider,
          model: "m",
          outcome: pick(["upstream_timeout", "502", "429"]),
          latency_ms: rand() * 5000,
        });
      }
      attempts.push({
        provider,
        model: "m",
        outcome: ok ? "ok" : "upstream_error",
        latency_ms: rand() * 5000,
      });
    }
  }
  return { records, attempts };
}

Deno.test("recordRequest/recordAttempt: /metrics parses and its counters match the usage records", () => {
  const { records, attempts } = dataset();
  const metrics = new GatewayMetrics();
  for (const r of records) metrics.recordRequest(r);
  for (const a of attempts) metrics.recordAttempt(a);
  const text = metrics.render();
  assert.equal(metrics.contentType, "text/plain; version=0.0.4; charset=utf-8");

  const families = parse(text);
  assert.deepEqual(families.map((f) => [f.name, f.type]), [
    ["gateway_requests_total", "COUNTER"],
    ["gateway_denials_total", "COUNTER"],
    ["gateway_policy_modifications_total", "COUNTER"],
    ["gateway_guardrail_outcomes_total", "COUNTER"],
    ["gateway_tokens_total", "COUNTER"],
    ["gateway_cost_total", "COUNTER"],
    ["gateway_cost_by_class_total", "COUNTER"],
    ["gen_ai_client_token_usage", "HISTOGRAM"],
    ["gen_ai_client_operation_duration_seconds", "HISTOGRAM"],
    ["gen_ai_server_time_to_first_token_seconds", "HISTOGRAM"],
    ["gateway_upstream_duration_seconds", "HISTOGRAM"],
    ["gateway_upstream_failures_total", "COUNTER"],
    ["gateway_streams_in_flight", "GAUGE"],
    ["gateway_cache_hits_total", "COUNTER"],
    ["gateway_cache_misses_total", "COUNTER"],
    ["gateway_cache_bypass_total", "COUNTER"],
    ["gateway_cache_store_errors_total", "COUNTER"],
    ["gateway_cache_store_up", "GAUGE"],
    ["gateway_cache_entries", "GAUGE"],
    ["gateway_cache_bytes", "GAUGE"],
  ]);
  for (const f of families) assert.ok(f.help.length > 0, f.name);

  const s = samplesOf(text);
  const label = (v: string | null) => v ?? "";

  // Requests: the total, and per label set.
  const requests = sumBy(s, "gateway_requests_total", ["endpoint", "alias", "provider", "status", "outcome"]);
  assert.equal([...requests.values()].reduce((a, b) => a + b, 0), records.length);
  assert.deepEqual(
    sorted(requests),
    sorted(
      tally(
        records.map((r) => [r.endpoint, label(r.alias), label(r.provider), r.status, r.outcome].join("|")),
      ),
    ),
  );
  for (const dim of ["alias", "provider", "status", "outcome", "endpoint"] as const) {
    assert.deepEqual(
      sorted(sumBy(s, "gateway_requests_total", [dim])),
      sorted(tally(records.map((r) => String(r[dim] ?? "")))),
      dim,
    );
  }
  assert.ok(requests.has("chat|||404|allow"), "a null alias and provider are empty labels");

  // Denials and modifications by rule.
  const byRule = (o: PolicyOutcome) =>
    tally(records.filter((r) => r.outcome === o).map((r) => label(r.rule)));
  assert.deepEqual(sorted(sumBy(s, "gateway_denials_total", ["rule"])), sorted(byRule("deny")));
  assert.equal(sumBy(s, "gateway_denials_total", ["rule"]).size, 3);
  assert.deepEqual(
    sorted(sumBy(s, "gateway_policy_modifications_total", ["rule"])),
    sorted(byRule("modify")),
  );

  // Tokens and cost.
  const tokens = new Map<string, number>();
  const cost = new Map<string, number>();
  for (const r of records) {
    addTo(tokens, `${label(r.alias)}|${label(r.provider)}|input`, r.prompt_tokens);
    addTo(tokens, `${label(r.alias)}|${label(r.provider)}|output`, r.completion_tokens);
    addTo(cost, `${label(r.alias)}|${label(r.provider)}`, r.cost);
  }
  assert.deepEqual(sorted(sumBy(s, "gateway_tokens_total", ["alias", "provider", "type"])), sorted(tokens));
  const costSeen = sumBy(s, "gateway_cost_total", ["alias", "provider"]);
  assert.deepEqual([...costSeen.keys()].sort(), sorted(cost).map(([k]) => k));
  for (const [k, v] of cost) if (v > 0) assert.ok(Math.abs(costSeen.get(k)! - v) < 1e-9, k);

  // Histograms: _count equals the number of observations, +Inf equals _count.
  const genai = records.filter((r) => r.endpoint === "chat" || r.endpoint === "embeddings");
  const duration = sumBy(s, "gen_ai_client_operation_duration_seconds_count", [
    "gen_ai_operation_name",
    "error_type",
  ]);
  const errorTypeOf = (r: UsageRecord) => r.error_code ?? (r.status >= 400 ? String(r.status) : "");
  assert.deepEqual(sorted(duration), sorted(tally(genai.map((r) => `${r.endpoint}|${errorTypeOf(r)}`))));
  const durationSum = [...sumBy(s, "gen_ai_client_operation_duration_seconds_sum", []).values()][0];
  assert.ok(Math.abs(durationSum - genai.reduce((a, r) => a + r.latency_ms / 1000, 0)) < 1e-6);
  const infBuckets = (name: string) =>
    (s.get(`${name}_bucket`) ?? []).filter((x) => x.labels.le === "+Inf").reduce((a, x) => a + x.value, 0);
  assert.equal(infBuckets("gen_ai_client_operation_duration_seconds"), genai.length);

  const withTokens = genai.filter((r) => r.prompt_tokens + r.completion_tokens > 0);
  const usage = sumBy(s, "gen_ai_client_token_usage_count", ["gen_ai_token_type"]);
  assert.equal(usage.get("input"), withTokens.length);
  assert.equal(usage.get("output"), withTokens.filter((r) => r.endpoint === "chat").length);
  const usageSum = sumBy(s, "gen_ai_client_token_usage_sum", ["gen_ai_token_type"]);
  assert.equal(usageSum.get("input"), withTokens.reduce((a, r) => a + r.prompt_tokens, 0));
  assert.equal(usageSum.get("output"), withTokens.reduce((a, r) => a + r.completion_tokens, 0));

  const ttft = sumBy(s, "gen_ai_server_time_to_first_token_seconds_count", ["gen_ai_request_model"]);
  assert.deepEqual(
    sorted(ttft),
    sorted(tally(records.filter((r) => r.stream && r.ttft_ms !== null).map((r) => label(r.alias)))),
  );
  assert.ok([...ttft.values()].reduce((a, b) => a + b, 0) > 10, "the data set has streams with ttft");

  // Upstream attempts.
  const upstream = sumBy(s, "gateway_upstream_duration_seconds_count", ["provider"]);
  assert.deepEqual(sorted(upstream), sorted(tally(attempts.map((a) => a.provider))));
  const failures = sumBy(s, "gateway_upstream_failures_total", ["provider", "outcome"]);
  assert.deepEqual(
    sorted(failures),
    sorted(tally(attempts.filter((a) => a.outcome !== "ok").map((a) => `${a.provider}|${a.outcome}`))),
  );
  assert.deepEqual(s.get("gateway_streams_in_flight"), [{ labels: {}, value: 0 }]);
});

Deno.test("recordRequest: the gen_ai histograms count the operation passed, else the endpoint's only one", () => {
  const metrics = new GatewayMetrics();
  const ops = () =>
    sumBy(samplesOf(metrics.render()), "gen_ai_client_operation_duration_seconds_count", [
      "gen_ai_operation_name",
    ]);
  // Gemini's and Messages' records: the endpoint does not say, the route did.
  metrics.recordRequest(record({ endpoint: "gemini" }), "embeddings");
  metrics.recordRequest(record({ endpoint: "gemini" }), "generate_content");
  metrics.recordRequest(record({ endpoint: "messages" }), "chat");
  metrics.recordRequest(record({ endpoint: "responses", stream: true, ttft_ms: 40 }), "chat");
  // A token count, a stored response or a prewarm: none, on whatever endpoint.
  metrics.recordRequest(record({ endpoint: "responses" }), null);
  metrics.recordRequest(record({ endpoint: "chat" }), null);
  metrics.recordRequest(record({ endpoint: "gemini" }));
  metrics.recordRequest(record({ endpoint: "messages" }));
  // Not told (the semantic cache's own embedding call): the one operation of `embeddings` (and of `chat`).
  metrics.recordRequest(record({ endpoint: "embeddings" }));
  metrics.recordRequest(record({ endpoint: "chat" }));
  assert.deepEqual(sorted(ops()), sorted(new Map([["chat", 3], ["generate_content", 1], ["embeddings", 2]])));
  const text = metrics.render();
  const usage = sumBy(samplesOf(text), "gen_ai_client_token_usage_count", [
    "gen_ai_operation_name",
    "gen_ai_token_type",
  ]);
  assert.deepEqual(
    sorted(usage),
    sorted(
      new Map([
        ["chat|input", 3],
        ["chat|output", 3],
        ["generate_content|input", 1],
        ["generate_content|output", 1],
        ["embeddings|input", 2],
      ]),
    ),
  );
  const ttft = sumBy(samplesOf(text), "gen_ai_server_time_to_first_token_seconds_count", [
    "gen_ai_operation_name",
  ]);
  assert.deepEqual(sorted(ttft), sorted(new Map([["chat", 1]])));
});

Deno.test("cost by class: each usage-record cost column is a class of gateway_cost_by_class_total", () => {
  const metrics = new GatewayMetrics();
  // Cache reads and writes, output and reasoning; no uncached input (an all-cached prompt).
  metrics.recordRequest(record({
    cost: 1.875,
    cost_input: 0,
    cost_cached: 0.125,
    cost_cache_write: 0.25,
    cost_output: 1,
    cost_reasoning: 0.5,
  }));
  metrics.recordRequest(record({
    alias: "chat-b",
    provider: "aws",
    cost: 0.53125,
    cost_input: 0.03125,
    cost_cached: 0,
    cost_cache_write: 0,
    cost_output: 0.5,
    cost_reasoning: 0,
  }));
  // Once more for the first label set: the counter adds up. (Amounts exact in binary, so the text is exact.)
  metrics.recordRequest(record({ cost: 0.5625, cost_cached: 0.0625, cost_output: 0.5 }));
  // A record from before the split (no cost_* fields), and odd numbers, add nothing by class.
  metrics.recordRequest(record({ alias: "chat-old", cost: 0.5 }));
  metrics.recordRequest(
    record({ alias: "chat-odd", cost_input: NaN, cost_output: -1, cost_cached: Infinity }),
  );

  const text = metrics.render();
  const family = parse(text).find((f) => f.name === "gateway_cost_by_class_total");
  assert.equal(family?.type, "COUNTER");
  assert.match(family!.help, /price table's currency/);
  const lines = text.split("\n").filter((l) => l.startsWith("gateway_cost_by_class_total{")).sort();
  assert.deepEqual(lines, [
    'gateway_cost_by_class_total{alias="chat-b",provider="aws",class="input"} 0.03125',
    'gateway_cost_by_class_total{alias="chat-b",provider="aws",class="output"} 0.5',
    'gateway_cost_by_class_total{alias="chat-default",provider="local",class="cache_write"} 0.25',
    'gateway_cost_by_class_total{alias="chat-default",provider="local",class="cached_input"} 0.1875',
    'gateway_cost_by_class_total{alias="chat-default",provider="local",class="output"} 1.5',
    'gateway_cost_by_class_total{alias="chat-default",provider="local",class="reasoning"} 0.5',
  ]);
  // The classes add up to the total for each label set whose records carry the split.
  const byClass = sumBy(samplesOf(text), "gateway_cost_by_class_total", ["alias", "provider"]);
  const total = sumBy(samplesOf(text), "gateway_cost_total", ["alias", "provider"]);
  for (const key of ["chat-default|local", "chat-b|aws"]) {
    assert.ok(Math.abs(byClass.get(key)! - total.get(key)!) < 1e-12, key);
  }
  assert.equal(byClass.get("chat-old|local"), undefined);
  assert.equal(byClass.get("chat-odd|local"), undefined);
});

Deno.test("streamStarted/streamEnded: the in-flight gauge follows and never goes negative", () => {
  const metrics = new GatewayMetrics();
  const gauge = () => samplesOf(metrics.render()).get("gateway_streams_in_flight")?.[0].value;
  for (let i = 0; i < 5; i++) metrics.streamStarted();
  assert.equal(gauge(), 5);
  for (let i = 0; i < 3; i++) metrics.streamEnded();
  assert.equal(gauge(), 2);
  for (let i = 0; i < 10; i++) metrics.streamEnded();
  assert.equal(gauge(), 0);
});

Deno.test("recordRequest x100k: runs through and the output still parses (a sanity run, no timing)", () => {
  const { records, attempts } = dataset();
  const metrics = new GatewayMetrics();
  const started = performance.now();
  for (let i = 0; i < 100_000; i++) metrics.recordRequest(records[i % records.length]);
  for (let i = 0; i < 100_000; i++) metrics.recordAttempt(attempts[i % attempts.length]);
  const elapsed = performance.now() - started;
  const text = metrics.render();
  const total = [...sumBy(samplesOf(text), "gateway_requests_total", []).values()][0];
  assert.equal(total, 100_000);
  console.log(`200k record calls in ${elapsed.toFixed(0)} ms; /metrics is ${text.length} bytes`);
});
