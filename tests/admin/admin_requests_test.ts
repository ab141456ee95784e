/**
 * `GET /admin/requests` and the console's `/admin/usage` filters over HTTP, on an in-process gateway with a
 * real usage pipeline and SQLite store: requests just made are in the log (the pipeline is flushed first),
 * pages follow `next_cursor`, the new filters and group keys reach the store, and every bad parameter is a
 * 400 naming it.
 */
import assert from "node:assert/strict";
import { hashToken } from "../../lib/auth/authenticate.ts";
import { parseConfigText } from "../../lib/config/load.ts";
import { createMemoryLogger } from "../../lib/log.ts";
import { createProviders } from "../../lib/providers/registry.ts";
import { createGateway } from "../../lib/server.ts";
import { createUsagePipeline } from "../../lib/usage/pipeline.ts";
import type { UsageRecord } from "../../lib/usage/record.ts";
import { createSqliteStore } from "../../lib/usage/sqlite_store.ts";
import type { UsageDatabase } from "../../lib/usage/store.ts";
import { makeRecord } from "../helpers/usage.ts";

const TOKEN = "gw-requests-test-token-0123456789";
const ADMIN = "gw-requests-admin-token-0123456789";

const CONFIG = `
providers: { local: { type: builtin } }
models:
  chat-echo:
    type: chat
    targets: [ { provider: local, model: echo } ]
    content_rules:
      - { name: pii, pattern: "SSN-[0-9]+", action: redact }
      - { name: secret, pattern: "TOPSECRET", action: deny, message: "No secrets." }
tokens:
  - { name: t, sha256: ${hashToken(TOKEN)}, models: ["*"], max_tokens: 5 }
admin_tokens:
  - { name: ops, sha256: ${hashToken(ADMIN)} }
`;

async function withGateway(
  fn: (call: (path: string, init?: RequestInit) => Promise<Response>, store: UsageDatabase) => Promise<void>,
) {
  const result = parseConfigText(CONFIG, { source: "<test>", env: {} });
  assert.ok(result.ok);
  const state = { config: result.config, providers: createProviders(result.config.providers) };
  const logger = createMemoryLogger();
  const store = createSqliteStore(":memory:");
  const dir = await Deno.makeTempDir();
  // A long flush interval: records reach the store only because the admin routes flush the pipeline.
  const pipeline = createUsagePipeline({
    store,
    spillPath: `${dir}/spill.jsonl`,
    queueSize: 1000,
    batchSize: 500,
    flushIntervalMs: 60_000,
    retryMaxMs: 50,
    logger,
  });
  const handler = createGateway({
    state: () => state,
    logger,
    services: {
      usage: pipeline,
      usageStore: {
        flush: () => pipeline.flush(),
        query: (q) => store.query(q),
        listRecords: (q) => store.listRecords(q),
      },
    },
  });
  try {
    await fn((path, init) => handler(new Request(`http://gw.test${path}`, init)), store);
  } finally {
    await pipeline.close();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const admin = { headers: { authorization: `Bearer ${ADMIN}` } };

function chat(content: string, max_tokens?: number): RequestInit {
  return {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat-echo", messages: [{ role: "user", content }], max_tokens }),
  };
}

Deno.test("admin requests: the log lists requests just made, newest first, paged by next_cursor", async () => {
  await withGateway(async (call) => {
    const sent: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await call("/v1/chat/completions", chat(`hello ${i}`, 3));
      sent.push(res.status);
      await res.body?.cancel();
    }
    const denied = await call("/v1/chat/completions", chat("TOPSECRET please", 3));
    assert.equal(denied.status, 400);
    await denied.body?.cancel();
    // Modified by two rules at once: the content rule redacted, and the max_tokens ceiling lowered.
    const modified = await call("/v1/chat/completions", chat("my SSN-1234", 50));
    assert.equal(modified.status, 200);
    await modified.body?.cancel();
    assert.deepEqual(sent, Array(7).fill(200));

    const first = await call("/admin/requests?limit=4", admin);
    assert.equal(first.status, 200);
    const page1 = await first.json();
    assert.equal(page1.object, "list");
    assert.equal(page1.data.length, 4);
    assert.equal(page1.has_more, true);
    assert.equal(typeof page1.next_cursor, "string");
    const newest: UsageRecord = page1.data[0];
    assert.equal(newest.outcome, "modify");
    assert.equal(newest.rule, "alias.content:pii,token.max_tokens");
    assert.equal(newest.token, "t");
    assert.equal(newest.endpoint, "chat");
    assert.equal(newest.stream, false);
    assert.equal(typeof newest.latency_ms, "number");
    assert.ok(!("uid" in newest));
    assert.equal(newest.trace_id, null, "telemetry is off: no trace");
    assert.equal(page1.data[1].outcome, "deny");
    assert.equal(page1.data[1].rule, "alias.content:secret");

    const ids = page1.data.map((r: UsageRecord) => r.request_id);
    let cursor = page1.next_cursor;
    while (cursor !== null) {
      const page = await (await call(`/admin/requests?limit=4&before=${encodeURIComponent(cursor)}`, admin))
        .json();
      ids.push(...page.data.map((r: UsageRecord) => r.request_id));
      cursor = page.next_cursor;
      assert.equal(page.has_more, cursor !== null);
    }
    assert.equal(ids.length, 9);
    assert.equal(new Set(ids).size, 9);
    const all = await (await call("/admin/requests", admin)).json();
    assert.deepEqual(all.data.map((r: UsageRecord) => r.request_id), ids);
    assert.equal(all.has_more, false);
    assert.equal(all.next_cursor, null);

    // Filters: a status class and code, a rule (any of the joined ones), the upstream model.
    const ofStatus = async (q: string) =>
      (await (await call(`/admin/requests?${q}`, admin)).json()).data.length;
    assert.equal(await ofStatus("status=4xx"), 1);
    assert.equal(await ofStatus("status=400"), 1);
    assert.equal(await ofStatus("status=2xx"), 8);
    assert.equal(await ofStatus("status=5xx"), 0);
    assert.equal(await ofStatus("rule=token.max_tokens"), 1);
    assert.equal(await ofStatus("rule=alias.content:pii&outcome=modify"), 1);
    assert.equal(await ofStatus("upstream_model=echo&status=200"), 8);

    // The same filters and the new group keys on /admin/usage.
    const usage = await (await call("/admin/usage?group_by=rule,endpoint", admin)).json();
    assert.deepEqual(
      usage.groups.map((g: { key: Record<string, string>; requests: number }) => [g.key.rule, g.requests]),
      [[null, 7], ["alias.content:pii", 1], ["alias.content:secret", 1], ["token.max_tokens", 1]],
    );
    const byModel =
      await (await call("/admin/usage?upstream_model=echo&group_by=upstream_model,minute", admin))
        .json();
    assert.equal(byModel.query.upstream_model, "echo");
    assert.equal(byModel.groups.reduce((n: number, g: { requests: number }) => n + g.requests, 0), 8);
    assert.match(byModel.groups[0].key.minute, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/);
    const byRule = await (await call("/admin/usage?rule=token.max_tokens", admin)).json();
    assert.equal(byRule.totals.requests, 1);
    // The cache's sums are in every answer: zero here, where no alias has a cache.
    for (const t of [usage.totals, ...usage.groups]) {
      assert.deepEqual([t.cache_hits, t.cache_lookups, t.saved_tokens, t.saved_cost], [0, 0, 0, 0]);
    }
  });
});

Deno.test("admin requests: each record's cost by token class is returned, and /admin/usage sums it", async () => {
  await withGateway(async (call, store) => {
    const res = await call("/v1/chat/completions", chat("hello", 3));
    assert.equal(res.status, 200);
    await res.body?.cancel();
    // A priced, cached, reasoning request, as the accounting writes it (the builtin target has no price).
    const split = {
      cost_input: 0.25,
      cost_cached: 0.125,
      cost_cache_write: 0.5,
      cost_output: 0.75,
      cost_reasoning: 1,
    };
    const priced = makeRecord(1, { cost: 2.625, ...split });
    const second = { ...makeRecord(2, { cost: 2.625, ...split }), uid: "p2" };
    await store.insert([{ ...priced, uid: "p1" }, second]);
    const log = (await (await call("/admin/requests", admin)).json()).data as UsageRecord[];
    const classes = (r: Partial<typeof split>) => [
      r.cost_input,
      r.cost_cached,
      r.cost_cache_write,
      r.cost_output,
      r.cost_reasoning,
    ];
    // The gateway's own request: unpriced, so every class is there and 0.
    assert.deepEqual(
      log.map((r) => [r.token === "t" ? "live" : r.request_id, ...classes(r)]),
      [
        ["live", 0, 0, 0, 0, 0],
        ["req_2", 0.25, 0.125, 0.5, 0.75, 1],
        ["req_1", 0.25, 0.125, 0.5, 0.75, 1],
      ],
    );
    assert.deepEqual(log[2], priced);
    const usage = await (await call("/admin/usage?group_by=token,alias", admin)).json();
    assert.deepEqual(classes(usage.totals), [0.5, 0.25, 1, 1.5, 2]);
    const alice = usage.groups.find((g: { key: Record<string, string> }) => g.key.token === "alice");
    assert.deepEqual([alice.key.alias, alice.cost, ...classes(alice)], [
      "chat-default",
      5.25,
      0.5,
      0.25,
      1,
      1.5,
      2,
    ]);
    const live = usage.groups.find((g: { key: Record<string, string> }) => g.key.token === "t");
    assert.deepEqual(classes(live), [0, 0, 0, 0, 0]);
  });
});

Deno.test("admin requests: trace_id finds the request of a trace; every record carries one", async () => {
  await withGateway(async (call, store) => {
    const res = await call("/v1/chat/completions", chat("hello", 3));
    assert.equal(res.status, 200);
    await res.body?.cancel();
    // Telemetry is off in this gateway, so traced records are written as a traced gateway would write them.
    const trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    await store.insert([
      { ...makeRecord(1, { trace_id: trace }), uid: "traced-1" },
      { ...makeRecord(2, { trace_id: "0af7651916cd43dd8448eb211c80319c" }), uid: "traced-2" },
    ]);
    const all = await (await call("/admin/requests", admin)).json();
    assert.deepEqual(all.data.map((r: UsageRecord) => r.trace_id), [
      null,
      "0af7651916cd43dd8448eb211c80319c",
      trace,
    ]);
    const found = await call(`/admin/requests?trace_id=${trace}`, admin);
    assert.equal(found.status, 200);
    const page = await found.json();
    assert.deepEqual(page.data, [makeRecord(1, { trace_id: trace })]);
    assert.equal(page.has_more, false);
    const other = await (await call(`/admin/requests?trace_id=${"f".repeat(32)}&token=alice`, admin)).json();
    assert.deepEqual(other.data, []);
  });
});

Deno.test("admin requests: guardrail finds the records a guardrail acted on, with their outcomes", async () => {
  await withGateway(async (call, store) => {
    const masked = [{ name: "pii", phase: "input" as const, action: "mask" as const, types: ["email"] }];
    const denied = [{
      name: "secrets",
      phase: "output" as const,
      action: "deny" as const,
      types: ["api_key"],
    }];
    await store.insert([
      {
        ...makeRecord(1, { guardrails: masked, outcome: "modify", rule: "guardrail:pii" }),
        uid: "guarded-1",
      },
      { ...makeRecord(2, { guardrails: denied }), uid: "guarded-2" },
      { ...makeRecord(3), uid: "guarded-3" },
    ]);
    const all = await (await call("/admin/requests", admin)).json();
    assert.deepEqual(all.data.map((r: UsageRecord) => r.guardrails), [null, denied, masked]);
    const found = await call("/admin/requests?guardrail=pii", admin);
    assert.equal(found.status, 200);
    assert.deepEqual((await found.json()).data, [
      makeRecord(1, { guardrails: masked, outcome: "modify", rule: "guardrail:pii" }),
    ]);
    const none = await (await call("/admin/requests?guardrail=secrets&token=bob", admin)).json();
    assert.deepEqual(none.data, []);
  });
});

Deno.test("admin requests: bad parameters are 400s naming the parameter; a client token is refused", async () => {
  await withGateway(async (call) => {
    const cases: [string, string][] = [
      ["/admin/requests?limit=0", "limit"],
      ["/admin/requests?limit=1001", "limit"],
      ["/admin/requests?limit=ten", "limit"],
      ["/admin/requests?limit=-5", "limit"],
      ["/admin/requests?status=6xx", "status"],
      ["/admin/requests?status=42", "status"],
      ["/admin/requests?status=4XX5", "status"],
      ["/admin/requests?before=not-a-cursor", "before"],
      ["/admin/requests?before=%25%25", "before"],
      ["/admin/requests?from=yesterday", "from"],
      ["/admin/requests?outcome=maybe", "outcome"],
      ["/admin/requests?rule=a,b", "rule"],
      ["/admin/requests?rule=", "rule"],
      ["/admin/requests?trace_id=", "trace_id"],
      ["/admin/requests?trace_id=4BF92F3577B34DA6A3CE929D0E0E4736", "trace_id"],
      ["/admin/requests?trace_id=4bf92f3577b34da6", "trace_id"],
      ["/admin/requests?trace_id=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "trace_id"],
      ["/admin/requests?guardrail=", "guardrail"],
      [`/admin/requests?guardrail=${"g".repeat(65)}`, "guardrail"],
      ["/admin/requests?guardrail=a%00b", "guardrail"],
      ["/admin/usage?rule=token.rpm,token.tpm", "rule"],
      ["/admin/usage?group_by=rule,week", "group_by"],
      ["/admin/usage?group_by=status", "group_by"],
    ];
    for (const [path, param] of cases) {
      const res = await call(path, admin);
      assert.equal(res.status, 400, path);
      const body = await res.json();
      assert.equal(body.error.param, param, path);
      assert.equal(body.error.type, "invalid_request_error", path);
    }
    const client = await call("/admin/requests", { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(client.status, 401);
    await client.body?.cancel();
    const ok = await call("/admin/requests?status=5XX&limit=1000&upstream_model=x&rule=token.rpm", admin);
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { object: "list", data: [], has_more: false, next_cursor: null });
  });
});
