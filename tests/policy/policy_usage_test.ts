/**
 * Policies, usage records, the admin usage API and metrics, end to end over real sockets: limits are exact,
 * every request leaves exactly one usage record, and /admin/usage and /metrics agree with the records.
 */
import assert from "node:assert/strict";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { type FaultUpstream, startFaultUpstream } from "../helpers/fault_upstream.ts";
import type { TestGateway } from "../helpers/gateway.ts";
import { pollUsageRows, waitForUsage } from "../helpers/usage_rows.ts";
import { waitFor } from "../helpers/usage.ts";
import { withFakeGateway } from "../helpers/with_gateway.ts";

const ADMIN = "gw-admin-token-policy-0123456789";
const T = {
  main: "gw-main-token-0123456789abcdef",
  rpm: "gw-rpm-token-0123456789abcdef",
  tpm: "gw-tpm-token-0123456789abcdef",
  budget: "gw-budget-token-0123456789abcdef",
  conc: "gw-conc-token-0123456789abcdef",
  chatOnly: "gw-chatonly-token-0123456789abcdef",
  ceiling: "gw-ceiling-token-0123456789abcdef",
};

function config(up: FaultUpstream): string {
  const token = (name: string, secret: string, extra = "") =>
    `  - { name: ${name}, environment: test, sha256: ${hashToken(secret)}, models: ["*"]${extra} }`;
  return `
providers:
  local: { type: builtin }
  up: { type: openai, base_url: "${up.baseURL}" }
models:
  chat-echo:
    type: chat
    targets: [ { provider: local, model: echo, price: { input: 1000, output: 2000 } } ]
    content_rules:
      - { name: secret, pattern: "TOPSECRET", action: deny, message: "Secrets may not be sent." }
      - { name: ssn, pattern: "\\\\b\\\\d{3}-\\\\d{2}-\\\\d{4}\\\\b", action: redact }
  chat-slow: { type: chat, targets: [ { provider: up, model: slow, retries: 0 } ] }
  chat-fail: { type: chat, targets: [ { provider: up, model: fail, retries: 0 } ] }
  embed-local: { type: embedding, targets: [ { provider: local, model: hash } ] }
tokens:
${token("main", T.main)}
${token("rpm-10", T.rpm, ", limits: { rpm: 10 }")}
${token("tpm-300", T.tpm, ", limits: { tpm: 300 }")}
${token("budget-60", T.budget, ", budget: { tokens: 60, period: day }")}
${token("conc-2", T.conc, ", limits: { concurrent: 2 }")}
${token("chat-only", T.chatOnly, ", endpoints: [chat]")}
${token("ceiling-3", T.ceiling, ", max_tokens: 3")}
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;
}

function withGateway(fn: (gw: TestGateway, up: FaultUpstream) => Promise<void>) {
  return withFakeGateway(() => startFaultUpstream("up"), config, fn);
}

let nextId = 0;
/** Sends a chat request with a known request id; reads the whole body. */
async function chat(
  gw: TestGateway,
  token: string,
  body: Record<string, unknown>,
  init: { signal?: AbortSignal; id?: string } = {},
) {
  const id = init.id ?? `test-${++nextId}`;
  const response = await fetch(`${gw.baseURL}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": id },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content: "hi" }], ...body }),
    signal: init.signal,
  });
  const text = await response.text();
  return { id, status: response.status, headers: response.headers, text };
}

const admin = (gw: TestGateway, path: string) =>
  fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } });

Deno.test("policy: an RPM limit of N lets exactly N of 3N concurrent requests through, streams included", async () => {
  await withGateway(async (gw) => {
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => chat(gw, T.rpm, { stream: i % 2 === 0 })),
    );
    const ok = results.filter((r) => r.status === 200);
    const denied = results.filter((r) => r.status === 429);
    assert.equal(ok.length, 10);
    assert.equal(denied.length, 20);
    for (const r of denied) {
      const body = JSON.parse(r.text);
      assert.equal(body.error.code, "rate_limit_exceeded");
      assert.equal(body.error.type, "requests");
      assert.ok(Number(r.headers.get("retry-after")) >= 1);
      assert.equal(r.headers.get("x-ratelimit-limit-requests"), "10");
      assert.equal(r.headers.get("x-ratelimit-remaining-requests"), "0");
    }
    for (const r of ok) assert.equal(r.headers.get("x-ratelimit-limit-requests"), "10");
    const remaining = ok.map((r) => Number(r.headers.get("x-ratelimit-remaining-requests"))).sort((a, b) =>
      a - b
    );
    assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

Deno.test("policy: a TPM limit admits exactly what fits, streams included, and settles with real usage", async () => {
  await withGateway(async (gw, up) => {
    // Each request is estimated at 5 prompt + 25 max tokens = 30; the upstream holds them all in flight.
    up.script.push(...Array.from({ length: 30 }, () => ({ delayMs: 300 })));
    const results = await Promise.all(
      Array.from(
        { length: 30 },
        (_, i) => chat(gw, T.tpm, { model: "chat-slow", max_tokens: 25, stream: i % 3 === 0 }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 10);
    for (const r of results.filter((r) => r.status === 429)) {
      assert.equal(JSON.parse(r.text).error.type, "tokens");
      assert.ok(Number(r.headers.get("retry-after")) >= 1);
    }
    assert.equal(ok[0].headers.get("x-ratelimit-limit-tokens"), "300");
    // Settled with the real usage (6 tokens each), the refund lets more through at once.
    const again = await chat(gw, T.tpm, { model: "chat-slow", max_tokens: 25 });
    assert.equal(again.status, 200);
  });
});

Deno.test("policy: a token budget admits requests until used up, counting streams, then 429 insufficient_quota", async () => {
  await withGateway(async (gw) => {
    const statuses: number[] = [];
    let used = 0;
    for (let i = 0; i < 12; i++) {
      const r = await chat(gw, T.budget, {
        messages: [{ role: "user", content: "one two three four five" }],
        stream: i % 2 === 1,
      });
      statuses.push(r.status);
      if (r.status === 200) used += 10; // echo: 5 prompt + 5 completion tokens
      else {
        const body = JSON.parse(r.text);
        assert.equal(r.status, 429);
        assert.equal(body.error.type, "insufficient_quota");
        assert.equal(body.error.code, "insufficient_quota");
      }
    }
    // Admitted while used < 60: exactly six requests of ten tokens each.
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429, 429, 429, 429, 429, 429]);
    assert.equal(used, 60);
  });
});

interface Row {
  request_id: string;
  token: string | null;
  alias: string | null;
  endpoint: string;
  stream: number;
  status: number;
  outcome: string;
  rule: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  tokens_estimated: number;
  cost: number;
  error_code: string | null;
  attempts: number;
  ttft_ms: number | null;
}

Deno.test("usage: a mixed run leaves exactly one correct record per request; /admin/usage and /metrics agree", async () => {
  await withGateway(async (gw, up) => {
    const expected = new Map<string, Partial<Row>>();
    const run = async (token: string, body: Record<string, unknown>, want: Partial<Row>) => {
      const r = await chat(gw, token, body);
      expected.set(r.id, { ...want, status: want.status ?? r.status });
      return r;
    };
    const ok = await run(T.main, {}, { outcome: "allow", status: 200, endpoint: "chat", prompt_tokens: 1 });
    assert.equal(JSON.parse(ok.text).choices[0].message.content, "hi");
    await run(T.main, { stream: true }, { outcome: "allow", status: 200, stream: 1 });
    const redacted = await run(T.main, { messages: [{ role: "user", content: "my ssn is 123-45-6789" }] }, {
      outcome: "modify",
      rule: "alias.content:ssn",
    });
    assert.equal(JSON.parse(redacted.text).choices[0].message.content, "my ssn is [REDACTED]");
    await run(T.main, { messages: [{ role: "user", content: "TOPSECRET plans" }] }, {
      outcome: "deny",
      rule: "alias.content:secret",
      status: 400,
      error_code: "content_policy_violation",
    });
    const capped = await run(T.ceiling, { messages: [{ role: "user", content: "a b c d e f" }] }, {
      outcome: "modify",
      rule: "token.max_tokens",
      completion_tokens: 3,
    });
    assert.equal(JSON.parse(capped.text).choices[0].finish_reason, "length");
    for (let i = 0; i < 12; i++) {
      const r = await chat(gw, T.rpm, {});
      expected.set(
        r.id,
        r.status === 200 ? { outcome: "allow" } : { outcome: "deny", rule: "token.rpm", status: 429 },
      );
    }
    up.script.push({ status: 500 });
    await run(T.main, { model: "chat-fail" }, { status: 502, error_code: "upstream_error", attempts: 1 });
    await run(T.main, { model: "no-such-alias" }, {
      status: 404,
      alias: null,
      error_code: "model_not_found",
    });
    await run("gw-unknown-token-0123456789", {}, { status: 401, token: null, error_code: "invalid_api_key" });

    // Concurrency: two slow requests in flight, the third is denied.
    // Both are held upstream (so admitted and in flight) before the third is sent, rather than hoped to be after
    // a fixed wait; the hold is long enough for the third to be decided while they are.
    up.script.push({ delayMs: 800 }, { delayMs: 800 });
    const hitsBefore = up.hits;
    const slow = [
      run(T.conc, { model: "chat-slow" }, { outcome: "allow" }),
      run(T.conc, { model: "chat-slow" }, { outcome: "allow" }),
    ];
    await waitFor(() => up.hits >= hitsBefore + 2);
    await run(T.conc, { model: "chat-slow" }, { outcome: "deny", rule: "token.concurrent", status: 429 });
    await Promise.all(slow);

    // A client that aborts its stream is recorded too.
    up.script.push({ chunkIntervalMs: 200 });
    const abort = new AbortController();
    const abortId = "test-abort";
    expected.set(abortId, { stream: 1, error_code: "client_closed_request", status: 200 });
    const streaming = await fetch(`${gw.baseURL}/chat/completions`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${T.main}`,
        "content-type": "application/json",
        "x-request-id": abortId,
      },
      body: JSON.stringify({ model: "chat-slow", stream: true, messages: [{ role: "user", content: "hi" }] }),
      signal: abort.signal,
    });
    await streaming.body!.getReader().read();
    abort.abort();

    // Embeddings, a forbidden endpoint, and the models list.
    const embed = await fetch(`${gw.baseURL}/embeddings`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${T.main}`,
        "content-type": "application/json",
        "x-request-id": "test-embed",
      },
      body: JSON.stringify({ model: "embed-local", input: "three little words" }),
    });
    await embed.body?.cancel();
    expected.set("test-embed", {
      endpoint: "embeddings",
      status: 200,
      prompt_tokens: 3,
      completion_tokens: 0,
    });
    const forbidden = await fetch(`${gw.baseURL}/embeddings`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${T.chatOnly}`,
        "content-type": "application/json",
        "x-request-id": "test-forbidden",
      },
      body: JSON.stringify({ model: "embed-local", input: "x" }),
    });
    await forbidden.body?.cancel();
    expected.set("test-forbidden", { outcome: "deny", rule: "token.endpoints", status: 403 });
    const models = await fetch(`${gw.baseURL}/models`, {
      headers: { authorization: `Bearer ${T.main}`, "x-request-id": "test-models" },
    });
    await models.body?.cancel();
    expected.set("test-models", { endpoint: "models", status: 200, outcome: "allow" });

    // Every record is in the store once its request is over.
    await waitForUsage(gw, expected.size, { adminToken: ADMIN, ms: 5_000, intervalMs: 20 });
    const rows = await pollUsageRows<Row>(gw, () => true);

    assert.equal(rows.length, expected.size, "exactly one record per request");
    const byId = new Map(rows.map((r) => [r.request_id, r]));
    assert.equal(byId.size, rows.length, "no request recorded twice");
    for (const [id, want] of expected) {
      const row = byId.get(id);
      assert.ok(row, `record for ${id}`);
      for (const [key, value] of Object.entries(want)) {
        assert.equal(row[key as keyof Row], value, `${id}.${key}`);
      }
    }
    const priced = byId.get(ok.id)!;
    assert.equal(priced.cost, (priced.prompt_tokens * 1000 + priced.completion_tokens * 2000) / 1e6);
    assert.ok(byId.get("test-abort")!.tokens_estimated === 1, "no usage arrived before the abort: counted");

    // The admin API's totals are the records' totals.
    const report = await (await admin(gw, "/admin/usage?group_by=outcome")).json();
    const sum = (f: (r: Row) => number) => rows.reduce((n, r) => n + f(r), 0);
    assert.equal(report.totals.requests, rows.length);
    assert.equal(report.totals.prompt_tokens, sum((r) => r.prompt_tokens));
    assert.equal(report.totals.completion_tokens, sum((r) => r.completion_tokens));
    assert.ok(Math.abs(report.totals.cost - sum((r) => r.cost)) < 1e-9);
    const denials: Record<string, number> = {};
    for (const r of rows) if (r.outcome === "deny") denials[r.rule!] = (denials[r.rule!] ?? 0) + 1;
    assert.deepEqual(report.totals.denials, denials);
    assert.equal(report.totals.errors, rows.filter((r) => r.status >= 400 && r.outcome !== "deny").length);
    const groups = Object.fromEntries(
      report.groups.map((g: { key: { outcome: string }; requests: number }) => [g.key.outcome, g.requests]),
    );
    assert.equal(groups.deny, rows.filter((r) => r.outcome === "deny").length);
    assert.equal(groups.modify, 2);

    // /metrics parses, and its counters match the records.
    const metricsResponse = await admin(gw, "/metrics");
    assert.equal(metricsResponse.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
    const families = parsePrometheusTextFormat(await metricsResponse.text()) as {
      name: string;
      metrics: { value?: string; labels?: Record<string, string> }[];
    }[];
    const family = (name: string) => families.find((f) => f.name === name)!;
    const total = (name: string, filter: (l: Record<string, string>) => boolean = () => true) =>
      family(name).metrics.filter((m) => filter(m.labels ?? {})).reduce((n, m) => n + Number(m.value), 0);
    assert.equal(total("gateway_requests_total"), rows.length);
    assert.equal(total("gateway_requests_total", (l) => l.outcome === "deny"), groups.deny);
    assert.equal(total("gateway_requests_total", (l) => l.status === "502"), 1);
    assert.equal(total("gateway_tokens_total", (l) => l.type === "input"), report.totals.prompt_tokens);
    assert.equal(total("gateway_tokens_total", (l) => l.type === "output"), report.totals.completion_tokens);
    for (const [rule, count] of Object.entries(denials)) {
      assert.equal(total("gateway_denials_total", (l) => l.rule === rule), count, rule);
    }
    assert.equal(total("gateway_streams_in_flight"), 0);
    const unauthenticated = await fetch(`${gw.url}/metrics`);
    assert.equal(unauthenticated.status, 401);
    await unauthenticated.body?.cancel();
  });
});

Deno.test("admin: /admin/config shows the live config with every secret redacted; bad usage queries are 400", async () => {
  await withGateway(async (gw) => {
    const text = await (await admin(gw, "/admin/config")).text();
    for (const secret of [...Object.values(T), ADMIN]) assert.ok(!text.includes(hashToken(secret)));
    const body = JSON.parse(text);
    assert.equal(body.tokens.find((t: { name: string }) => t.name === "rpm-10").limits.rpm, 10);
    assert.equal(body.models["chat-echo"].content_rules[1].name, "ssn");
    const bad = await admin(gw, "/admin/usage?group_by=request_id");
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error.param, "group_by");
    const badTime = await admin(gw, "/admin/usage?from=yesterday");
    assert.equal(badTime.status, 400);
    await badTime.body?.cancel();
  });
});
