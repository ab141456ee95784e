/**
 * End-user limits (issue 26, acceptance 3): rpm holds per user; 100,000 distinct users in a burst with
 * `max_users: 10000` keep the tracked users and the counters bounded (measured and printed), forget the least
 * recently seen, and keep the limits of the most recent users exact.
 */
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import type { EndUserLimitsConfig } from "../config/schema.ts";
import type { ResolvedToken } from "../config/types.ts";
import type { CounterStore } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createRedisCounterStore } from "./redis_counter_store.ts";
import { createPolicyEngine } from "./engine.ts";
import { clock, denial, model, token } from "./engine_test_helpers.ts";
import { endUserOf, userKeyOf } from "./end_users.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import type { PolicyRequest } from "./types.ts";

const REDIS_URL = "redis://127.0.0.1:6379";

function limits(over: Partial<EndUserLimitsConfig> = {}): EndUserLimitsConfig {
  return { rpm: 1, max_users: 10_000, ...over };
}

function engineWith(endUserLimits: EndUserLimitsConfig, on: "alias" | "token" = "alias") {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const engine = createPolicyEngine(store, { now: c.now });
  const identity = token(on === "token" ? { endUserLimits } : {});
  const alias = model(on === "alias" ? { endUserLimits } : {});
  const req = (user: string | undefined, over: Partial<PolicyRequest> = {}): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model: alias,
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }], ...(user ? { user } : {}) },
    estimatedTokens: 10,
    ...over,
  });
  return { c, store, engine, req };
}

Deno.test("end users: rpm holds per user, each user apart; a request naming no user is not limited per user", async () => {
  const { engine, req, c } = engineWith(limits({ rpm: 2 }));
  for (let i = 0; i < 2; i++) await (await engine.admit(req("alice"))).settle({ tokens: 10, cost: 0 });
  const denied = await denial(engine.admit(req("alice")));
  assert.equal(denied.status, 429);
  assert.equal(denied.rule, "end_user.rpm");
  assert.match(
    denied.message,
    /^Rate limit reached for user "alice" of model chat-default on requests per min/,
  );
  await engine.admit(req("bob"));
  await engine.admit(req("bob"));
  for (let i = 0; i < 5; i++) await engine.admit(req(undefined));
  c.advance(30_000); // half a minute refills one request of 2 per minute
  await engine.admit(req("alice"));
  await denial(engine.admit(req("alice")));
});

Deno.test("end users: tpm and a token budget per user, on a token's block", async () => {
  const { engine, req } = engineWith(
    limits({ rpm: undefined, tpm: 25, budget: { tokens: 30, period: "day" } }),
    "token",
  );
  const a = await engine.admit(req("u1"));
  await a.settle({ tokens: 12, cost: 0 });
  const b = await engine.admit(req("u1"));
  await b.settle({ tokens: 12, cost: 0 });
  const tpm = await denial(engine.admit(req("u1")));
  assert.equal(tpm.rule, "end_user.tpm");
  assert.match(tpm.message, /user "u1" of token web-prod/);
  await engine.admit(req("u2"));
});

Deno.test("end users: the user comes from safety_identifier, user, metadata.user_id or the configured header", () => {
  const l = limits();
  assert.equal(endUserOf(l, { safety_identifier: "s", user: "u" }, undefined), "s");
  assert.equal(endUserOf(l, { user: "u" }, undefined), "u");
  assert.equal(endUserOf(l, { metadata: { user_id: "m" } }, undefined), "m");
  assert.equal(endUserOf(l, { user: "" }, undefined), undefined);
  assert.equal(endUserOf(l, { user: 42 }, undefined), undefined);
  const h = limits({ header: "x-end-user" });
  assert.equal(endUserOf(h, { user: "u" }, new Headers({ "x-end-user": " h1 " })), "h1");
  assert.equal(endUserOf(h, { user: "u" }, new Headers()), undefined, "the header decides when configured");
  // Keys stay short and plain whatever a client sends.
  assert.equal(userKeyOf("alice@example.com"), "alice@example.com");
  assert.match(userKeyOf("x".repeat(10_000)), /^#[0-9a-f]{32}$/);
  assert.match(userKeyOf("a:b"), /^#[0-9a-f]{32}$/);
  assert.notEqual(userKeyOf("a:b"), userKeyOf("a;b"));
});

Deno.test("end users: 100,000 distinct users with max_users 10,000 stay bounded and the recent ones stay exact", async () => {
  const { engine, store, req } = engineWith(limits({ rpm: 1, max_users: 10_000 }));
  const users = 100_000;
  const heapBefore = Deno.memoryUsage().heapUsed;
  for (let i = 0; i < users; i++) {
    const admission = await engine.admit(req(`user-${i}`));
    await admission.settle({ tokens: 10, cost: 0 });
  }
  const tracked = engine.endUsers!.size();
  const counters = store.size();
  const heapGrowthMiB = (Deno.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
  console.log(
    `end users: ${users} distinct → ${tracked} tracked, ${counters} counters in the store, ` +
      `heap +${heapGrowthMiB.toFixed(1)} MiB`,
  );
  assert.equal(tracked, 10_000, "tracked users are bounded by max_users");
  assert.ok(counters <= 10_000, `counters bounded with the users: ${counters}`);
  // The oldest were forgotten with their counters: user-0 starts afresh (its rpm of 1 is free again).
  await engine.admit(req("user-0"));
  // Every one of the most recent users is still held to its limit (one request per minute, used).
  for (let i = users - 9_999; i < users; i += 1) {
    if (i % 97 !== 0 && i !== users - 1) continue;
    const d = await denial(engine.admit(req(`user-${i}`)));
    assert.equal(d.rule, "end_user.rpm", `user-${i}`);
  }
});

Deno.test("end users: a replica forgetting a user under max_users leaves the shared counters alone (the user active on another replica stays limited)", async () => {
  // Two replicas sharing one store (Redis; here an in-memory stand-in), each with its own recent users.
  const c = clock();
  const shared = createMemoryCounterStore(c.now);
  const replica = () =>
    createPolicyEngine(createResilientCounterStore(shared, { onFailure: "fail_open", expectedReplicas: 2 }), {
      now: c.now,
    });
  const a = replica();
  const b = replica();
  const identity = token();
  const alias = model({ endUserLimits: limits({ rpm: 3, max_users: 2 }) });
  const req = (user: string): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model: alias,
    body: { model: "chat-default", messages: [], user },
    estimatedTokens: 1,
  });
  await a.admit(req("v"));
  await b.admit(req("v"));
  await b.admit(req("v"));
  // Replica a sees two other users: "v" falls out of its list of two.
  await a.admit(req("o1"));
  await a.admit(req("o2"));
  await Promise.resolve();
  // "v" has used its 3 a minute across the replicas, whichever list forgot it.
  assert.equal((await denial(b.admit(req("v")))).rule, "end_user.rpm");
  assert.equal((await denial(a.admit(req("v")))).rule, "end_user.rpm");
});

/** Requests of one user id ("1") on one alias whose block limits each user, from two tokens (applications). */
function twoTenants(endUserLimits: EndUserLimitsConfig, store: CounterStore, now: () => number) {
  const engine = createPolicyEngine(store, { now });
  const alias = model({ endUserLimits });
  // Same name, two identities: a token revoked and issued again is another application, not the same one.
  const a = token({ id: "tok_tenant_a", name: "app" });
  const b = token({ id: "tok_tenant_b", name: "app" });
  const req = (identity: ResolvedToken, user = "1"): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model: alias,
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }], user },
    estimatedTokens: 10,
  });
  return { engine, a, b, req };
}

/** One tenant exhausts its user "1" (rpm and budget); the other tenant's user "1" is untouched. */
async function assertTenantsApart(store: CounterStore, now: () => number) {
  const { engine, a, b, req } = twoTenants(
    limits({ rpm: 2, budget: { tokens: 100, period: "day" } }),
    store,
    now,
  );
  await (await engine.admit(req(a))).settle({ tokens: 100, cost: 0 });
  assert.equal((await denial(engine.admit(req(a)))).rule, "end_user.budget");
  await (await engine.admit(req(b))).settle({ tokens: 10, cost: 0 });
  await (await engine.admit(req(b))).settle({ tokens: 10, cost: 0 });
  assert.equal((await denial(engine.admit(req(b)))).rule, "end_user.rpm", "b's own user keeps its own limit");
  return { engine, a, b, req };
}

Deno.test("end users: an alias's block keeps each token's users apart, by the token's identity", async () => {
  const c = clock();
  await assertTenantsApart(createMemoryCounterStore(c.now), c.now);
});

Deno.test("end users: on Redis too, an alias's users are keyed by the token's id and the user", async () => {
  const c = clock();
  const keyPrefix = `test:${crypto.randomUUID()}:`;
  const store = createRedisCounterStore({ url: REDIS_URL, keyPrefix, timeoutMs: 1_000, clock: c.now });
  const redis = new Redis(REDIS_URL, { lazyConnect: true });
  try {
    assert.equal(await store.whenReady(5_000), true, "Redis at 127.0.0.1:6379 must be running (.ci/run)");
    await assertTenantsApart(store, c.now);
    const keys = (await redis.keys(`${keyPrefix}*`)).map((k) => k.slice(keyPrefix.length)).sort();
    for (const id of ["tok_tenant_a", "tok_tenant_b"]) {
      assert.ok(keys.includes(`{limits}:end_user:alias:chat-default:token:${id}:1:rpm`), keys.join("\n"));
    }
    assert.ok(keys.every((k) => !k.includes("alias:chat-default:1:")), keys.join("\n"));
    if (keys.length > 0) await redis.del(...keys.map((k) => keyPrefix + k));
  } finally {
    await store.close();
    redis.disconnect();
  }
});

Deno.test("end users: an alias's max_users bounds the users of all its tokens together", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const { engine, a, b, req } = twoTenants(limits({ rpm: 1, max_users: 2 }), store, c.now);
  await engine.admit(req(a, "1"));
  await engine.admit(req(b, "1"));
  assert.equal(engine.endUsers!.size("alias:chat-default"), 2);
  await engine.admit(req(b, "2"));
  assert.equal(engine.endUsers!.size("alias:chat-default"), 2, "the block's list stays within max_users");
  assert.equal(engine.endUsers!.size(), 2);
  // The least recently seen (a's "1") was forgotten with its counters; b's "1" is still held to its limit.
  await engine.admit(req(a, "1"));
  assert.equal((await denial(engine.admit(req(b, "2")))).rule, "end_user.rpm");
});

Deno.test("end users: a user forgotten while its requests run leaves no budget counter behind when they settle", async () => {
  // Budgets reserve at admission and settle later: with 200 requests in flight over max_users 100, each settles
  // after its user was forgotten (its counters with it). The refund that settles it must not recreate one.
  const { engine, store, req } = engineWith(
    limits({ rpm: undefined, max_users: 100, budget: { tokens: 1_000_000, period: "month" } }),
    "token",
  );
  const running: { settle: (used: { tokens: number; cost: number }) => Promise<void> }[] = [];
  for (let i = 0; i < 2_000; i++) {
    running.push(await engine.admit(req(`invented-${i}`, { estimatedTokens: 20 })));
    if (running.length > 200) await running.shift()!.settle({ tokens: 10, cost: 0 });
  }
  for (const admission of running) await admission.settle({ tokens: 10, cost: 0 });
  assert.equal(engine.endUsers!.size(), 100);
  assert.ok(store.size() <= 100, `counters bounded with the users: ${store.size()}`);
});
