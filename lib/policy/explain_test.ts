/**
 * Explaining a token and an alias: each rule that would refuse a request is named as the request path names it,
 * the numbers are what the engine's counters hold, and explaining takes nothing from them. Counters on Redis,
 * and on the resilient wrapper while its shared store is down: explain_counter_stores_test.ts.
 */
import assert from "node:assert/strict";
import { defaultEndpoint } from "./explanation.ts";
import { limit, setup, T0 } from "./explain_test_helpers.ts";

Deno.test("explain: an allowed request shows its targets, limits, budget, ceiling, content rules and prices", async () => {
  const s = setup();
  const e = await s.explainFor("ci-bot", "chat-main");
  assert.equal(e.object, "gateway.explanation");
  assert.deepEqual(e.token, {
    name: "ci-bot",
    id: "cfg_ci-bot",
    source: "config",
    environment: "staging",
    status: "active",
    team: null,
  });
  assert.equal(e.model, "chat-main");
  assert.equal(e.endpoint, "chat");
  assert.equal(e.allowed, true);
  assert.equal(e.denied_by, null);
  // The request path's order: authentication, alias resolution, the engine's rules, routing.
  assert.deepEqual(e.checks.map((c) => c.rule), [
    "token.status",
    "token.models",
    "model.type",
    "token.endpoints",
    "alias.content:pii",
    "alias.content:secrets",
    "token.max_tokens",
    "token.concurrent",
    "token.rpm",
    "alias.rpm",
    "token.tpm",
    "token.budget",
    "model.targets",
  ]);
  assert.ok(e.checks.every((c) => c.ok === true), JSON.stringify(e.checks));
  assert.deepEqual(e.targets.map((t) => [t.provider, t.model, t.state, t.available, t.weight, t.price]), [
    ["local", "echo", "healthy", true, 1, { input: 1, output: 4 }],
    ["spare", "echo", "healthy", true, 2, { input: 0.5, output: 2 }],
  ]);
  assert.deepEqual(e.limits.map((l) => [l.rule, l.limit, l.used, l.remaining]), [
    ["token.concurrent", 2, 0, 2],
    ["token.rpm", 3, 0, 3],
    ["alias.rpm", 100, 0, 100],
    ["token.tpm", 1000, 0, 1000],
  ]);
  assert.deepEqual(e.budget, {
    rule: "token.budget",
    period: "month",
    period_id: "2026-11",
    unit: "tokens",
    limit: 500,
    used: 0,
    remaining: 500,
    resets_at: "2026-12-01T00:00:00.000Z",
    stop_streams: false,
  });
  assert.equal(e.max_tokens, 256);
  assert.deepEqual(e.content_rules, [
    {
      rule: "alias.content:pii",
      action: "redact",
      pattern: "\\d{3}-\\d{2}-\\d{4}",
      flags: "i",
      message: null,
    },
    {
      rule: "alias.content:secrets",
      action: "deny",
      pattern: "password",
      flags: "",
      message: "no passwords",
    },
  ]);
  assert.equal(e.strategy, "fallback");
  assert.deepEqual(e.counters, { source: "store" });
});

Deno.test("explain: a forbidden alias is token.models and names the token's patterns", async () => {
  const s = setup();
  const e = await s.explainFor("ci-bot", "chat-other");
  assert.equal(e.allowed, false);
  assert.equal(e.denied_by?.rule, "token.models");
  assert.equal(e.denied_by?.status, 404);
  assert.equal(e.denied_by?.code, "model_not_found");
  assert.match(e.denied_by!.message, /"chat-main", "embed-\*"/);
  const check = e.checks.find((c) => c.rule === "token.models")!;
  assert.equal(check.ok, false);
  assert.match(check.detail, /"chat-main", "embed-\*"/);
});

Deno.test("explain: a disabled or expired token is token.status", async () => {
  const s = setup();
  const off = await s.explainFor("off", "chat-main");
  assert.equal(off.allowed, false);
  assert.equal(off.token.status, "disabled");
  assert.deepEqual([off.denied_by?.rule, off.denied_by?.status, off.denied_by?.code], [
    "token.status",
    401,
    "token_disabled",
  ]);
  const old = await s.explainFor("old", "chat-main");
  assert.equal(old.token.status, "expired");
  assert.equal(old.denied_by?.rule, "token.status");
  assert.match(old.checks[0].detail, /expired at 2020-01-02T00:00:00.000Z/);
});

Deno.test("explain: an endpoint the alias does not serve is model.type, one the token may not call token.endpoints", async () => {
  const s = setup();
  const wrongType = await s.explainFor("ci-bot", "chat-main", "embeddings");
  assert.equal(wrongType.denied_by?.rule, "model.type");
  assert.equal(wrongType.denied_by?.status, 400);
  const notAllowed = await s.explainFor("ci-bot", "chat-main", "responses");
  assert.equal(notAllowed.denied_by?.rule, "token.endpoints");
  assert.equal(notAllowed.denied_by?.status, 403);
  // The engine's own message, as the client would read it.
  assert.match(notAllowed.denied_by!.message, /not allowed to call the responses endpoint/);
  // An embeddings request has no completion to cap.
  const embed = await s.explainFor("ci-bot", "embed-main");
  assert.equal(embed.allowed, true);
  assert.equal(embed.checks.some((c) => c.rule === "token.max_tokens"), false);
});

Deno.test("explain: counters drop with requests, explaining takes nothing, and an exhausted limit denies by its rule", async () => {
  const s = setup();
  const a = await s.admit("ci-bot", "chat-main");
  const before = await s.explainFor("ci-bot", "chat-main");
  assert.deepEqual([limit(before, "token.rpm").used, limit(before, "token.rpm").remaining], [1, 2]);
  // One request in flight holds one slot of two.
  assert.deepEqual([limit(before, "token.concurrent").used, limit(before, "token.concurrent").remaining], [
    1,
    1,
  ]);
  assert.equal(limit(before, "token.tpm").remaining, 990);
  assert.equal(before.budget?.used, 10);
  // Explaining again and again reads the same numbers: it took nothing, not even a concurrency slot.
  for (let i = 0; i < 5; i++) assert.deepEqual(await s.explainFor("ci-bot", "chat-main"), before);
  const b = await s.admit("ci-bot", "chat-main");
  await a.settle({ tokens: 10, cost: 0 });
  await b.settle({ tokens: 10, cost: 0 });
  await (await s.admit("ci-bot", "chat-main")).settle({ tokens: 10, cost: 0 });
  const spent = await s.explainFor("ci-bot", "chat-main");
  assert.deepEqual([limit(spent, "token.rpm").used, limit(spent, "token.rpm").remaining], [3, 0]);
  assert.equal(limit(spent, "alias.rpm").remaining, 97);
  assert.equal(limit(spent, "token.concurrent").used, 0);
  assert.equal(spent.budget?.used, 30);
  assert.equal(spent.allowed, false);
  assert.equal(spent.denied_by?.rule, "token.rpm");
  assert.equal(spent.denied_by?.status, 429);
  assert.match(spent.denied_by!.message, /Rate limit reached for token ci-bot on requests per min \(RPM\)/);
  // And the engine agrees.
  await assert.rejects(s.admit("ci-bot", "chat-main"), (err: { rule?: string }) => err.rule === "token.rpm");
});

Deno.test("explain: a spent budget is token.budget; a money budget reserves at the dearest target's rate", async () => {
  const s = setup();
  await (await s.admit("spender", "chat-main", 100)).settle({ tokens: 100, cost: 0.01 });
  const e = await s.explainFor("spender", "chat-main");
  assert.equal(e.denied_by?.rule, "token.budget");
  assert.equal(e.denied_by?.code, "insufficient_quota");
  assert.deepEqual(
    [e.budget?.unit, e.budget?.used, e.budget?.remaining, e.budget?.reserve_rate, e.budget?.stop_streams],
    ["cost", 0.01, 0, 4, true],
  );
  assert.equal(e.budget?.period_id, "2026-11-24");
});

Deno.test("explain: a money budget with less left than one token's reservation denies, as every request is", async () => {
  // spender: a cost budget of 0.01 a day; chat-main reserves at 4 per million tokens, so one token takes 0.000004.
  const s = setup();
  await (await s.admit("spender", "chat-main", 100)).settle({ tokens: 100, cost: 0.01 - 0.000001 });
  const e = await s.explainFor("spender", "chat-main");
  await assert.rejects(() => s.admit("spender", "chat-main", 1), (err: unknown) => {
    assert.equal((err as { rule?: string }).rule, "token.budget");
    return true;
  });
  assert.equal(e.allowed, false, "explain agrees with enforcement");
  assert.equal(e.denied_by?.rule, "token.budget");
});

Deno.test("explain: an ejected target shows ejected until when; with every target ejected, model.targets denies", async () => {
  const s = setup();
  const model = s.config.models.get("chat-main")!;
  const lease = s.health.acquire(model.targets[0], s.config.routing);
  assert.ok(typeof lease !== "string");
  lease.failed();
  lease.release();
  const one = await s.explainFor("ci-bot", "chat-main");
  assert.deepEqual(
    [one.targets[0].state, one.targets[0].ejected_until, one.targets[0].available],
    ["ejected", new Date(T0 + 30_000).toISOString(), false],
  );
  assert.equal(one.targets[1].state, "healthy");
  assert.equal(one.allowed, true);
  const other = s.health.acquire(model.targets[1], s.config.routing);
  assert.ok(typeof other !== "string");
  other.failed();
  other.release();
  const none = await s.explainFor("ci-bot", "chat-main");
  assert.equal(none.denied_by?.rule, "model.targets");
  assert.equal(none.denied_by?.status, 503);
});

Deno.test("explain: an alias is explained for the endpoint of its type by default", () => {
  assert.equal(defaultEndpoint("chat"), "chat");
  assert.equal(defaultEndpoint("embedding"), "embeddings");
  assert.equal(defaultEndpoint("moderation"), "moderations");
});

Deno.test("explain: a money budget's check says its amounts as money, without float noise", async () => {
  // spender: a cost budget of 0.01 a day. Three requests of 0.003 add up to 0.009000000000000001 as doubles.
  const s = setup();
  for (let i = 0; i < 3; i++) {
    await (await s.admit("spender", "chat-main", 1)).settle({ tokens: 1, cost: 0.003 });
  }
  const e = await s.explainFor("spender", "chat-main");
  const check = e.checks.find((c) => c.rule === "token.budget");
  assert.equal(check?.detail, "0.009 of 0.01 cost used in 2026-11-24, 0.001 left");
});
