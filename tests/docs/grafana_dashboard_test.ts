/**
 * `deploy/grafana/gateway-dashboard.json` against the metrics the gateway really exposes: a gateway runs
 * in-process with traffic that gives every metric family the dashboard reads a sample (allowed, streamed,
 * cached, denied, modified and failed requests), its `GET /metrics` is parsed, and every PromQL expression of
 * the dashboard (panel targets, rows' nested panels, template variable queries) must name only exposed metric
 * families and only labels those families carry.
 *
 * The label rule is deliberately simple: a label in a selector's matchers must be one of that selector's
 * family's labels, and a label in `by (…)`, `without (…)`, `on (…)`, `ignoring (…)` or `group_left/right (…)`
 * must be a label of every family in the same expression (`le` only for histograms). The dashboard keeps its
 * expressions within that rule.
 *
 * A few families exist only with an optional store configured (Redis, PostgreSQL); they cannot appear on this
 * test's `/metrics`, so they are checked against their registration in `lib/` instead, and must really be
 * absent here (so that list cannot hide a typo).
 *
 * @module
 */
import assert from "node:assert/strict";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { type FaultUpstream, startFaultUpstream } from "../helpers/fault_upstream.ts";
import { startGateway, TEST_TOKEN, TEST_TOKENS_YAML, type TestGateway } from "../helpers/gateway.ts";

const ROOT = new URL("../../", import.meta.url);
const DASHBOARD = new URL("deploy/grafana/gateway-dashboard.json", ROOT);

/** Families registered only when an optional store is configured: where each is registered in `lib/`. */
const CONDITIONAL_FAMILIES: Record<string, string> = {
  gateway_rate_limit_store_up: "lib/serve_state.ts",
  gateway_rate_limit_store_fallbacks_total: "lib/serve_state.ts",
  gateway_usage_store_up: "lib/serve_state.ts",
};

/** Exposed families the dashboard deliberately does not chart. */
const NOT_CHARTED = new Set<string>([]);

/** PromQL functions (and Grafana's `label_values`) the dashboard may call. */
const FUNCTIONS = new Set([
  "abs",
  "absent",
  "avg",
  "avg_over_time",
  "bottomk",
  "ceil",
  "changes",
  "clamp",
  "clamp_max",
  "clamp_min",
  "count",
  "count_over_time",
  "delta",
  "deriv",
  "floor",
  "group",
  "histogram_quantile",
  "idelta",
  "increase",
  "irate",
  "label_replace",
  "label_values",
  "max",
  "max_over_time",
  "min",
  "min_over_time",
  "quantile",
  "quantile_over_time",
  "rate",
  "resets",
  "round",
  "scalar",
  "sort",
  "sort_desc",
  "stddev",
  "sum",
  "sum_over_time",
  "time",
  "topk",
  "vector",
]);

/** PromQL keywords and constants: never metric names. */
const KEYWORDS = new Set([
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "bool",
  "offset",
  "and",
  "or",
  "unless",
  "le",
  "Inf",
  "NaN",
  "inf",
  "nan",
]);

const IDENT = "[a-zA-Z_:][a-zA-Z0-9_:]*";
const HISTOGRAM_SUFFIXES = ["_bucket", "_sum", "_count"];

/** A metric family as exposed: its type and the label names seen on its samples (`le` not included). */
export interface Family {
  type: string;
  labels: Set<string>;
  /** Whether `/metrics` had any sample of it (its labels are known only then). */
  sampled: boolean;
}

/** What an expression uses: metric names as written, labels per selector, grouping labels, functions. */
export interface ExprUse {
  metrics: string[];
  /** `[metric name or "", label]` for every label matcher `{label=…}`. */
  matchers: [string, string][];
  /** Labels of `by`/`without`/`on`/`ignoring`/`group_left`/`group_right` clauses and `label_values`. */
  grouping: string[];
  functions: string[];
}

/** Pulls metric names, labels and functions out of one PromQL expression (or a `label_values(…)` query). */
export function extractUse(expr: string): ExprUse {
  const use: ExprUse = { metrics: [], matchers: [], grouping: [], functions: [] };
  let e = expr;
  // Grafana's label_values(metric, label): the label is a grouping label of that metric.
  e = e.replace(
    /\blabel_values\s*\(([^,()]*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)/g,
    (_, inner: string, label) => {
      use.grouping.push(label);
      use.functions.push("label_values");
      return ` ${inner} `;
    },
  );
  // Selectors' matchers, with the metric name before them (if any); then strings are gone with them.
  e = e.replace(
    new RegExp(`(${IDENT})?\\s*\\{([^{}]*)\\}`, "g"),
    (_, name: string | undefined, body: string) => {
      const withoutStrings = body.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
      for (const m of withoutStrings.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)) {
        use.matchers.push([name ?? "", m[1]]);
      }
      return name === undefined ? " " : ` ${name} `;
    },
  );
  e = e.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, " ");
  // Range and subquery brackets ([5m], [$__rate_interval]) and Grafana variables elsewhere.
  e = e.replace(/\[[^\]]*\]/g, " ").replace(/\$\{[^}]*\}|\$[a-zA-Z_][a-zA-Z0-9_]*/g, " ");
  const grouping = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^()]*)\)/g;
  e = e.replace(grouping, (_, _keyword, list: string) => {
    use.grouping.push(...list.split(",").map((s) => s.trim()).filter((s) => s !== ""));
    return " ";
  });
  for (const m of e.matchAll(new RegExp(`(?<![a-zA-Z0-9_:.])(${IDENT})(\\s*\\()?`, "g"))) {
    const [, name, call] = m;
    if (call !== undefined) use.functions.push(name);
    else if (!KEYWORDS.has(name)) use.metrics.push(name);
  }
  return use;
}

/** The family a metric name belongs to: a histogram's `_bucket`/`_sum`/`_count` map to the histogram. */
function familyOf(name: string, families: Map<string, Family>): string {
  if (families.has(name)) return name;
  for (const suffix of HISTOGRAM_SUFFIXES) {
    const base = name.endsWith(suffix) ? name.slice(0, -suffix.length) : "";
    if (base !== "" && families.get(base)?.type === "histogram") return base;
  }
  return name;
}

/** Every problem with one expression against the exposed families (empty: it only uses what exists). */
export function checkExpr(expr: string, families: Map<string, Family>): string[] {
  const problems: string[] = [];
  const use = extractUse(expr);
  for (const fn of use.functions) {
    if (!FUNCTIONS.has(fn)) problems.push(`unknown function ${fn}()`);
  }
  const used = [...new Set(use.metrics.map((m) => familyOf(m, families)))];
  if (used.length === 0) problems.push("no metric in the expression");
  const hasLabel = (family: string, label: string) => {
    const f = families.get(family)!;
    if (label === "le") return f.type === "histogram";
    if (!f.sampled) problems.push(`${family} has no samples, so its labels cannot be checked`);
    return f.labels.has(label);
  };
  for (const family of used) {
    if (!families.has(family)) problems.push(`unknown metric ${family}`);
  }
  for (const [name, label] of use.matchers) {
    const family = familyOf(name, families);
    if (name === "" || !families.has(family)) continue;
    if (!hasLabel(family, label)) problems.push(`${family} has no label ${label}`);
  }
  for (const label of new Set(use.grouping)) {
    for (const family of used) {
      if (families.has(family) && !hasLabel(family, label)) problems.push(`${family} has no label ${label}`);
    }
  }
  return [...new Set(problems)];
}

interface ParsedFamily {
  name: string;
  type: string;
}

/**
 * The families of a `/metrics` body (names and types from the parser), with the label names of their samples
 * read from the sample lines themselves: the parser drops a histogram's labels.
 */
function exposedFamilies(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  for (const f of parsePrometheusTextFormat(text) as ParsedFamily[]) {
    families.set(f.name, { type: f.type.toLowerCase(), labels: new Set(), sampled: false });
  }
  const sample = new RegExp(`^(${IDENT})(?:\\{(.*)\\})?\\s+\\S+$`);
  for (const line of text.split("\n")) {
    const m = line.startsWith("#") ? null : line.match(sample);
    if (m === null) continue;
    const family = families.get(familyOf(m[1], families));
    assert.ok(family !== undefined, `sample of no declared family: ${line}`);
    family.sampled = true;
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) {
      if (l[1] !== "le") family.labels.add(l[1]);
    }
  }
  return families;
}

/** A family registered in `lib/` source as `.counter("name", "help", [labels]` (or gauge, histogram). */
function registeredFamily(name: string, file: string): Family | undefined {
  const source = Deno.readTextFileSync(new URL(file, ROOT));
  const re = new RegExp(
    `\\.(counter|gauge|histogram)\\(\\s*"${name}",\\s*"(?:[^"\\\\]|\\\\.)*",\\s*\\[([^\\]]*)\\]`,
  );
  const m = source.match(re);
  if (m === null) return undefined;
  const labels = [...m[2].matchAll(/"([^"]+)"/g)].map((l) => l[1]);
  return { type: m[1], labels: new Set(labels), sampled: true };
}

interface DashboardPanel {
  title?: string;
  type?: string;
  targets?: { expr?: string }[];
  panels?: DashboardPanel[];
}

interface Dashboard {
  title: string;
  uid: string;
  schemaVersion: number;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query?: string | { query?: string } }[] };
}

/** Every PromQL expression of the dashboard, with where it is: panels (rows' nested ones too), variables. */
export function dashboardExprs(dashboard: Dashboard): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  const walk = (panels: DashboardPanel[] | undefined) => {
    for (const panel of panels ?? []) {
      for (const t of panel.targets ?? []) {
        if (typeof t.expr === "string") out.push({ where: `panel "${panel.title}"`, expr: t.expr });
      }
      walk(panel.panels);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating.list) {
    if (v.type !== "query") continue;
    const query = typeof v.query === "string" ? v.query : v.query?.query;
    if (query !== undefined) out.push({ where: `variable $${v.name}`, expr: query });
  }
  return out;
}

const ADMIN = "gw-admin-token-grafana-0123456789";

function config(up: FaultUpstream): string {
  const price = "price: { input: 1000, output: 2000 }";
  return `
server: { public_metrics: true }
providers:
  local: { type: builtin }
  up: { type: openai, base_url: "${up.baseURL}" }
models:
  chat-echo:
    type: chat
    targets: [ { provider: local, model: echo, ${price} } ]
    content_rules:
      - { name: secret, pattern: "TOPSECRET", action: deny, message: "Secrets may not be sent." }
      - { name: ssn, pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b", action: redact }
  chat-cached: { type: chat, targets: [ { provider: local, model: echo, ${price} } ], cache: {} }
  chat-fail: { type: chat, targets: [ { provider: up, model: fail, retries: 0 } ] }
  chat-guarded: { type: chat, targets: [ { provider: local, model: echo, ${price} } ], guardrails: [emails] }
guardrails:
  emails: { type: pii, entities: [EMAIL], action: mask }
${TEST_TOKENS_YAML}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

async function chat(
  gw: TestGateway,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<number> {
  const response = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
  await response.text();
  return response.status;
}

/** `/metrics` of a gateway that has served one request of every kind the dashboard charts. */
async function metricsAfterTraffic(): Promise<string> {
  const up = startFaultUpstream("up");
  const gw = await startGateway(config(up));
  try {
    assert.equal(await chat(gw, { model: "chat-echo" }), 200);
    assert.equal(await chat(gw, { model: "chat-echo", stream: true }), 200);
    assert.equal(await chat(gw, { model: "chat-cached" }), 200); // miss
    assert.equal(await chat(gw, { model: "chat-cached" }), 200); // hit
    assert.equal(await chat(gw, { model: "chat-cached" }, { "cache-control": "no-store" }), 200); // bypass
    const denied = await chat(gw, { model: "chat-echo", messages: [{ role: "user", content: "TOPSECRET" }] });
    assert.equal(denied, 400);
    const redacted = await chat(gw, {
      model: "chat-echo",
      messages: [{ role: "user", content: "123-45-6789" }],
    });
    assert.equal(redacted, 200);
    const masked = await chat(gw, {
      model: "chat-guarded",
      messages: [{ role: "user", content: "mail bob@example.com" }],
    });
    assert.equal(masked, 200);
    up.script.push({ status: 500 });
    assert.equal(await chat(gw, { model: "chat-fail" }), 502);
    const response = await fetch(`${gw.url}/metrics`);
    assert.equal(response.status, 200, "server.public_metrics: true serves /metrics without a token");
    return await response.text();
  } finally {
    await gw.stop();
    await up.stop();
  }
}

Deno.test("grafana: the expression checker finds misspelt metrics, labels and functions", () => {
  const families = new Map<string, Family>([
    ["gateway_requests_total", { type: "counter", labels: new Set(["alias", "status"]), sampled: true }],
    ["gateway_latency_seconds", { type: "histogram", labels: new Set(["alias"]), sampled: true }],
  ]);
  assert.deepEqual(
    checkExpr(
      `sum by (alias) (rate(gateway_requests_total{alias=~"$alias",status=~"5.."}[$__rate_interval]))`,
      families,
    ),
    [],
  );
  assert.deepEqual(
    checkExpr(
      `histogram_quantile(0.99, sum by (le, alias) (rate(gateway_latency_seconds_bucket[5m]))) * 1e3`,
      families,
    ),
    [],
  );
  assert.deepEqual(checkExpr("label_values(gateway_requests_total, alias)", families), []);
  assert.deepEqual(checkExpr("sum(rate(gateway_requets_total[5m]))", families), [
    "unknown metric gateway_requets_total",
  ]);
  assert.deepEqual(checkExpr(`sum by (aliass) (rate(gateway_requests_total[5m]))`, families), [
    "gateway_requests_total has no label aliass",
  ]);
  assert.deepEqual(checkExpr(`sum(rate(gateway_requests_total{stauts="500"}[5m]))`, families), [
    "gateway_requests_total has no label stauts",
  ]);
  assert.deepEqual(checkExpr(`sum by (le) (rate(gateway_requests_total[5m]))`, families), [
    "gateway_requests_total has no label le",
  ]);
  assert.deepEqual(checkExpr(`histgram_quantile(0.5, gateway_latency_seconds_bucket)`, families), [
    "unknown function histgram_quantile()",
  ]);
  assert.deepEqual(checkExpr("label_values(gateway_requests_total, model)", families), [
    "gateway_requests_total has no label model",
  ]);
});

Deno.test("grafana: every dashboard query uses metric families and labels the gateway exposes on /metrics", async () => {
  const dashboard = JSON.parse(await Deno.readTextFile(DASHBOARD)) as Dashboard;
  assert.equal(typeof dashboard.title, "string");
  assert.equal(typeof dashboard.uid, "string");
  assert.ok(dashboard.schemaVersion >= 36, "a dashboard for Grafana 9+");
  const variables = new Map(dashboard.templating.list.map((v) => [v.name, v]));
  assert.equal(variables.get("datasource")?.type, "datasource");
  assert.equal((variables.get("datasource") as { query?: string }).query, "prometheus");
  assert.equal(variables.get("alias")?.type, "query");

  const families = exposedFamilies(await metricsAfterTraffic());
  for (const [name, file] of Object.entries(CONDITIONAL_FAMILIES)) {
    assert.ok(!families.has(name), `${name} is on /metrics here: drop it from CONDITIONAL_FAMILIES`);
    const registered = registeredFamily(name, file);
    assert.ok(registered !== undefined, `${name} is not registered in ${file}`);
    families.set(name, registered);
  }

  const exprs = dashboardExprs(dashboard);
  assert.ok(exprs.length >= 20, `only ${exprs.length} expressions found`);
  const problems: string[] = [];
  const used = new Set<string>();
  for (const { where, expr } of exprs) {
    for (const p of checkExpr(expr, families)) problems.push(`${where}: ${p}\n    ${expr}`);
    for (const m of extractUse(expr).metrics) used.add(familyOf(m, families));
  }
  assert.deepEqual(problems, [], problems.join("\n"));
  // And the other way: every family the gateway exposes is charted (or deliberately left out).
  const uncharted = [...families.keys()].filter((name) => !used.has(name) && !NOT_CHARTED.has(name));
  assert.deepEqual(uncharted, [], `exposed but not on the dashboard: ${uncharted.join(", ")}`);
  assert.ok(used.has("gen_ai_client_operation_duration_seconds"));
  assert.ok(used.has("gateway_cache_hits_total"));
  assert.ok(dashboardExprs(dashboard).some((e) => e.expr.includes("$__rate_interval")));
});
