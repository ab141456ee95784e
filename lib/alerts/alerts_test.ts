/**
 * Alerts end to end: events in, posts at a real local receiver out. Fleet semantics run against the Redis of
 * the development and CI machines (127.0.0.1:6379, started by .ci/run): two `createAlerts` ("replicas")
 * share one Redis counter store under a key prefix of the test's own, and each alert must arrive once.
 */
import assert from "node:assert/strict";
import { alertsSchema } from "../config/alerts_schema.ts";
import type { CounterStore } from "../policy/counter_store.ts";
import { createMemoryCounterStore } from "../policy/memory_counter_store.ts";
import { createRedisCounterStore, type RedisCounterStore } from "../policy/redis_counter_store.ts";
import { type Alerts, type BudgetUsedEvent, createAlerts } from "./alerts.ts";

type Body = Record<string, unknown>;

/** A receiver on a free port that answers 200 and keeps every body it got, parsed. */
function receiver() {
  const bodies: Body[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    bodies.push(JSON.parse(await req.text()));
    return new Response(null, { status: 204 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}/`, bodies, close: () => server.shutdown() };
}

/** Polls `cond` until it holds or 30 s pass (a bound on a failure, not a timing claim). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function clock(start = Date.UTC(2026, 10, 22, 12)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => t += ms };
}

async function redisStore(now?: () => number): Promise<RedisCounterStore> {
  const store = createRedisCounterStore({
    url: "redis://127.0.0.1:6379",
    keyPrefix: `test:alerts:${crypto.randomUUID()}:`,
    timeoutMs: 2_000,
    clock: now,
  });
  if (!await store.whenReady(5_000)) {
    await store.close();
    throw new Error("Redis at 127.0.0.1:6379 must be running (.ci/run)");
  }
  return store;
}

const PERIOD = { id: "2026-11", end: Date.UTC(2026, 11, 1) };

function budget(used: number, period = PERIOD): BudgetUsedEvent {
  return { scope: "token", name: "web", key: "tok_1", unit: "cost", used, limit: 100, period };
}

Deno.test("alerts: two replicas on one Redis store send each threshold once for 20 concurrent reports each", async () => {
  const r = receiver();
  const store = await redisStore();
  const config = alertsSchema.parse([{ url: r.url, budget_thresholds: [100, 50, 80, 80] }]);
  const replicas: Alerts[] = [createAlerts(config, store), createAlerts(config, store)];
  try {
    for (let i = 0; i < 20; i++) for (const a of replicas) a.budgetUsed(budget(100));
    await until(() => r.bodies.length >= 3, "three alerts");
    await Promise.all(replicas.map((a) => a.close()));
    assert.deepEqual(r.bodies.map((b) => b.threshold).sort((x, y) => Number(x) - Number(y)), [50, 80, 100]);
    const b = r.bodies[0];
    assert.equal(b.type, "budget");
    assert.match(String(b.id), /^alr_[0-9a-f]{24}$/);
    assert.deepEqual(
      [b.scope, b.name, b.unit, b.used, b.limit, b.period],
      ["token", "web", "cost", 100, 100, { id: "2026-11", end: "2026-12-01T00:00:00.000Z" }],
    );
  } finally {
    await Promise.all(replicas.map((a) => a.close()));
    await store.close();
    await r.close();
  }
});

Deno.test("alerts: thresholds fire as they are crossed, once per period, and only to receivers that asked", async () => {
  const budgets = receiver();
  const others = receiver();
  const store = createMemoryCounterStore();
  const config = alertsSchema.parse([
    { url: budgets.url, budget_thresholds: [50, 80, 100] },
    { url: others.url, denials: { count: 1, minutes: 1 }, ejections: true },
  ]);
  const a = createAlerts(config, store);
  const thresholds = () => budgets.bodies.map((b) => b.threshold);
  try {
    a.budgetUsed(budget(40));
    a.budgetUsed(budget(60));
    await until(() => budgets.bodies.length === 1, "the 50% alert");
    a.budgetUsed(budget(65));
    a.budgetUsed(budget(120));
    await until(() => budgets.bodies.length === 3, "the 80% and 100% alerts");
    const next = { id: "2026-12", end: Date.UTC(2027, 0, 1) };
    a.budgetUsed(budget(90, next));
    await until(() => budgets.bodies.length === 5, "the next period's alerts");
    await a.close();
    assert.deepEqual(thresholds().slice(0, 1), [50]);
    assert.deepEqual(thresholds().slice(1, 3).sort(), [100, 80]);
    assert.deepEqual(thresholds().slice(3).sort(), [50, 80]);
    assert.deepEqual(budgets.bodies.slice(3).map((b) => (b.period as Body).id), ["2026-12", "2026-12"]);
    assert.equal(others.bodies.length, 0);
  } finally {
    await a.close();
    await budgets.close();
    await others.close();
  }
});

Deno.test("alerts: more than N denials in a window fire once across replicas; the next window fires again", async () => {
  const r = receiver();
  const c = clock();
  const store = await redisStore(c.now);
  const config = alertsSchema.parse([{ url: r.url, denials: { count: 3, minutes: 5 } }]);
  const errors: Error[] = [];
  const options = { now: c.now, onError: (e: Error) => errors.push(e) };
  const replicas = [createAlerts(config, store, options), createAlerts(config, store, options)];
  try {
    const deny = (n: number, owner = "web") => {
      for (let i = 0; i < n; i++) {
        replicas[i % 2].denied({ rule: "token.rpm", owner, key: `token:${owner}:rpm` });
      }
    };
    deny(3, "other");
    deny(20);
    await until(() => r.bodies.length === 1, "the denials alert");
    c.advance(5 * 60_000);
    deny(4);
    await until(() => r.bodies.length === 2, "the next window's alert");
    await Promise.all(replicas.map((a) => a.close()));
    assert.equal(r.bodies.length, 2, "three denials of another owner are not more than three");
    const [first, second] = r.bodies;
    assert.deepEqual(
      [first.type, first.rule, first.owner, first.count, first.minutes, first.window_start],
      ["denials", "token.rpm", "web", 3, 5, "2026-11-22T12:00:00.000Z"],
    );
    assert.equal(second.window_start, "2026-11-22T12:05:00.000Z");
    assert.deepEqual(errors, []);
  } finally {
    await Promise.all(replicas.map((a) => a.close()));
    await store.close();
    await r.close();
  }
});

Deno.test("alerts: an ejection reported by two replicas is sent once, only where ejections are on", async () => {
  const on = receiver();
  const off = receiver();
  const store = await redisStore();
  const config = alertsSchema.parse([
    { url: on.url, ejections: true },
    { url: off.url, budget_thresholds: [50] },
  ]);
  const replicas = [createAlerts(config, store), createAlerts(config, store)];
  try {
    const until1 = new Date(Date.now() + 30_000);
    for (const a of replicas) {
      a.ejected({ target: "openai/gpt-x", provider: "openai", until: until1.toISOString(), failures: 5 });
    }
    await until(() => on.bodies.length === 1, "the ejection alert");
    await Promise.all(replicas.map((a) => a.close()));
    assert.deepEqual(
      [on.bodies[0].type, on.bodies[0].target, on.bodies[0].provider, on.bodies[0].failures],
      ["ejection", "openai/gpt-x", "openai", 5],
    );
    assert.equal(on.bodies.length, 1);
    assert.equal(off.bodies.length, 0);
  } finally {
    await Promise.all(replicas.map((a) => a.close()));
    await store.close();
    await on.close();
    await off.close();
  }
});

Deno.test("alerts: a failing store sends nothing and reports; a later success still fires", async () => {
  const r = receiver();
  const memory = createMemoryCounterStore();
  let failing = true;
  const store: CounterStore = {
    ...memory,
    periodAdd: (...args) => failing ? Promise.reject(new Error("store down")) : memory.periodAdd(...args),
  };
  const errors: Error[] = [];
  const a = createAlerts(alertsSchema.parse([{ url: r.url, budget_thresholds: [50] }]), store, {
    onError: (e) => errors.push(e),
  });
  try {
    a.budgetUsed(budget(70));
    await until(() => errors.length === 1, "the store error");
    assert.match(errors[0].message, /counter store failed/);
    assert.equal(r.bodies.length, 0);
    failing = false;
    a.budgetUsed(budget(71));
    await until(() => r.bodies.length === 1, "the alert once the store answers");
  } finally {
    await a.close();
    await r.close();
  }
});

Deno.test("alerts: a budget's spend that cannot be read takes no claim: a later denial, on any replica, fires", async () => {
  const store = createMemoryCounterStore();
  const config = alertsSchema.parse([{ url: "http://alerts.example/hook", budget_thresholds: [100] }]);
  const bodies: Body[] = [];
  const fetch: typeof globalThis.fetch = (_url, init) => {
    bodies.push(JSON.parse(String(init?.body)));
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  const errors: Error[] = [];
  const replicas = [0, 1].map(() => createAlerts(config, store, { fetch, onError: (e) => errors.push(e) }));
  const denied = (spent: () => Promise<number>) => ({ ...budget(0), spent });
  try {
    replicas[0].budgetDenied(denied(() => Promise.reject(new Error("store down"))));
    await until(() => errors.length === 1, "the store error");
    assert.match(errors[0].message, /counter store failed/);
    // Another replica, then the first, see the next denial: the threshold was not lost with the failed read.
    replicas[1].budgetDenied(denied(() => Promise.resolve(101)));
    await until(() => bodies.length === 1, "the alert");
    replicas[0].budgetDenied(denied(() => Promise.resolve(102)));
    await Promise.all(replicas.map((a) => a.close()));
    assert.deepEqual(bodies.map((b) => [b.threshold, b.used]), [[100, 101]], "sent once, as always");
  } finally {
    await Promise.all(replicas.map((a) => a.close()));
  }
});

Deno.test("alerts: recent() shows each alert's deliveries, newest first; long names are capped", async () => {
  const r = receiver();
  const failing = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(null, { status: 404 }),
  );
  const config = alertsSchema.parse([
    { url: r.url, denials: { count: 1, minutes: 1 }, secret: "never-shown" },
    { url: `http://127.0.0.1:${failing.addr.port}/x`, denials: { count: 1, minutes: 1 } },
  ]);
  const a = createAlerts(config, createMemoryCounterStore(), { backoffMs: 5 });
  try {
    const long = "o".repeat(10_000);
    a.denied({ rule: "team.budget", owner: "web", key: "team:web:budget:cost" });
    a.denied({ rule: "team.budget", owner: "web", key: "team:web:budget:cost" });
    a.denied({ rule: "token.rpm", owner: long, key: `token:${long}:rpm` });
    a.denied({ rule: "token.rpm", owner: long, key: `token:${long}:rpm` });
    await until(
      () =>
        a.recent().length === 2 && a.recent().every((v) => v.deliveries.every((d) => d.status !== "pending")),
      "both alerts to settle",
    );
    const [newest, oldest] = a.recent();
    assert.equal(oldest.alert.owner, "web");
    assert.ok(String(newest.alert.owner).length <= 200);
    assert.notEqual(newest.alert.owner, long);
    assert.deepEqual(
      newest.deliveries.map((d) => [d.target, d.status, d.attempts]),
      [[0, "delivered", 1], [1, "failed", 1]],
    );
    assert.equal(newest.deliveries[1].error, "HTTP 404");
    assert.equal(JSON.stringify(a.recent()).includes("never-shown"), false);
  } finally {
    await a.close();
    await r.close();
    await failing.shutdown();
  }
});
