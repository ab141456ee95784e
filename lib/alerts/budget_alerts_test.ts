/**
 * Budget alerts through the policy engine, as a receiver sees them: the posts that a run of admissions and
 * settlements makes, over the in-memory counters and over Redis (the store a fleet shares; its settlement is
 * one script). Every store call is tracked, so each step waits for exactly the calls it started, never for
 * a clock.
 */
import assert from "node:assert/strict";
import { alertsSchema } from "../config/alerts_schema.ts";
import type { CounterStore } from "../policy/counter_store.ts";
import { createMemoryCounterStore } from "../policy/memory_counter_store.ts";
import { createPolicyEngine } from "../policy/engine.ts";
import { clock, model, token } from "../policy/engine_test_helpers.ts";
import { createRedisCounterStore } from "../policy/redis_counter_store.ts";
import { seedTokenBudgets } from "../policy/seed_budgets.ts";
import { createMemoryLogger } from "../log.ts";
import type { UsageStore } from "../usage/store.ts";
import { createAlerts } from "./alerts.ts";
import { alertHooks, alertSeeding } from "./policy_hooks.ts";

type Body = Record<string, unknown>;

/** `store` with every call it answers tracked, and `quiet()` to wait until none is left. */
function tracked(store: CounterStore) {
  const calls = new Set<Promise<unknown>>();
  const wrap = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) => (...args: A): Promise<R> => {
    const p = fn(...args);
    calls.add(p);
    p.then(() => calls.delete(p), () => calls.delete(p));
    return p;
  };
  const out: CounterStore = {
    reserve: wrap(store.reserve),
    adjust: wrap(store.adjust),
    release: wrap(store.release),
    periodGet: wrap(store.periodGet),
    periodAdd: wrap(store.periodAdd),
    periodRaise: wrap(store.periodRaise),
    ...(store.settle ? { settle: wrap(store.settle) } : {}),
    ...(store.forget ? { forget: wrap(store.forget) } : {}),
  };
  /** Every call done, and what they led to run (a post is started on a resolved call, in microtasks). */
  const quiet = async () => {
    do {
      await Promise.allSettled([...calls]);
      await new Promise((resolve) => setTimeout(resolve, 0));
    } while (calls.size > 0);
  };
  return { store: out, quiet };
}

/** A `fetch` that keeps every alert posted and answers 204. */
function posts() {
  const bodies: Body[] = [];
  const fetch: typeof globalThis.fetch = (_url, init) => {
    bodies.push(JSON.parse(String(init?.body)));
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  return { bodies, fetch };
}

async function withStore(
  kind: "memory" | "redis",
  now: () => number,
  run: (store: CounterStore) => Promise<void>,
) {
  if (kind === "memory") return await run(createMemoryCounterStore(now));
  const redis = createRedisCounterStore({
    url: "redis://127.0.0.1:6379",
    keyPrefix: `test:budget-alerts:${crypto.randomUUID()}:`,
    timeoutMs: 2_000,
    clock: now,
  });
  try {
    if (!await redis.whenReady(5_000)) throw new Error("Redis at 127.0.0.1:6379 must be running (.ci/run)");
    await run(redis);
  } finally {
    await redis.close();
  }
}

for (const kind of ["memory", "redis"] as const) {
  Deno.test(`budget alerts (${kind}): judged on settled spend, not on estimates reserved by requests running`, async () => {
    const c = clock();
    await withStore(kind, c.now, async (inner) => {
      const { store, quiet } = tracked(inner);
      const receiver = posts();
      const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [80, 100] }]);
      const alerts = createAlerts(config, store, { now: c.now, fetch: receiver.fetch });
      const engine = createPolicyEngine(store, {
        now: c.now,
        ...alertHooks(alerts, config, store, () => {}),
      });
      const identity = token({ budget: { tokens: 1000, period: "month" } });
      const req = { identity, endpoint: "chat" as const, model: model(), estimatedTokens: 90 };
      try {
        // Ten requests running at once reserve 900 of 1000; each really uses 10.
        const running = [];
        for (let i = 0; i < 10; i++) running.push(await engine.admit(req));
        for (const a of running) {
          await a.settle({ tokens: 10, cost: 0 });
          await quiet();
        }
        assert.equal(receiver.bodies.length, 0, "100 of 1000 spent: no threshold reached");

        // Real spend now passes 80 %: 100 + 8 × 95 = 860.
        for (let i = 0; i < 8; i++) {
          await (await engine.admit({ ...req, estimatedTokens: 100 })).settle({ tokens: 95, cost: 0 });
          await quiet();
        }
        assert.deepEqual(
          receiver.bodies.map((b) => [b.threshold, b.used, b.limit]),
          [[80, 860, 1000]],
          "the 80 % alert, once, when spend crossed it",
        );
      } finally {
        await alerts.close();
      }
    });
  });
}

Deno.test("budget alerts: an end user forgotten under max_users takes its settled spend along", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [80] }]);
  const alerts = createAlerts(config, store, { now: c.now, fetch: posts().fetch });
  const engine = createPolicyEngine(store, { now: c.now, ...alertHooks(alerts, config, store, () => {}) });
  const identity = token({ endUserLimits: { max_users: 2, budget: { tokens: 1000, period: "day" } } });
  try {
    for (let i = 0; i < 50; i++) {
      const body = { model: "chat-default", messages: [], user: `user-${i}` };
      const a = await engine.admit({ identity, endpoint: "chat", model: model(), body, estimatedTokens: 10 });
      await a.settle({ tokens: 10, cost: 0 });
    }
    // Two users kept, each with its budget's counter and its settled spend.
    assert.equal(store.size(), 4);
  } finally {
    await alerts.close();
  }
});

Deno.test("budget alerts: an end user forgotten under max_users takes its thresholds' claims along", async () => {
  // A client inventing a user per request: each crosses 50 % and 80 % of its own budget, and is alerted once.
  const c = clock();
  const memory = createMemoryCounterStore(c.now);
  const { store, quiet } = tracked(memory);
  const receiver = posts();
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [50, 80] }]);
  const alerts = createAlerts(config, store, { now: c.now, fetch: receiver.fetch });
  const engine = createPolicyEngine(store, { now: c.now, ...alertHooks(alerts, config, store, () => {}) });
  const identity = token({ endUserLimits: { max_users: 2, budget: { tokens: 1000, period: "day" } } });
  try {
    for (let i = 0; i < 50; i++) {
      const body = { model: "chat-default", messages: [], user: `user-${i}` };
      const a = await engine.admit({ identity, endpoint: "chat", model: model(), body, estimatedTokens: 10 });
      await a.settle({ tokens: 900, cost: 0 });
      await quiet();
    }
    assert.equal(receiver.bodies.length, 100, "every user's 50 % and 80 %, once each");
    // Two users kept, each with its budget's counter, its settled spend and its two claims: not one claim
    // per threshold for every user ever invented, kept until the period ends.
    assert.equal(memory.size(), 2 * 4);
  } finally {
    await alerts.close();
  }
});

Deno.test("budget alerts: users forgotten while their requests run stay bounded once those settle and alert", async () => {
  // 200 requests in flight over max_users 100: each user is pushed out before its request ends. Its
  // settlement must then write none of its counters (spend above the estimate, its settled spend) nor claims:
  // the user's reservation went with it, so the request settles for nobody (the token's budget counts it), and
  // no threshold of a budget the gateway no longer keeps is crossed.
  const c = clock();
  const memory = createMemoryCounterStore(c.now);
  const { store, quiet } = tracked(memory);
  const receiver = posts();
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [80] }]);
  const alerts = createAlerts(config, store, { now: c.now, fetch: receiver.fetch });
  const engine = createPolicyEngine(store, { now: c.now, ...alertHooks(alerts, config, store, () => {}) });
  const identity = token({ endUserLimits: { max_users: 100, budget: { tokens: 1000, period: "day" } } });
  const running: { settle: (used: { tokens: number; cost: number }) => Promise<void> }[] = [];
  const settleOldest = async () => {
    await running.shift()!.settle({ tokens: 900, cost: 0 });
    await quiet();
  };
  try {
    for (let i = 0; i < 1_000; i++) {
      const body = { model: "chat-default", messages: [], user: `user-${i}` };
      running.push(
        await engine.admit({ identity, endpoint: "chat", model: model(), body, estimatedTokens: 10 }),
      );
      if (running.length > 200) await settleOldest();
    }
    while (running.length > 0) await settleOldest();
    // Only the last 100 users are still tracked when their requests settle: each alerts once, the others none.
    assert.equal(receiver.bodies.length, 100, "no alert for a user forgotten before its request settled");
    assert.equal(engine.endUsers!.size(), 100);
    // At most the users tracked, each with its budget's counter, its settled spend and its claim; not those
    // of the 900 others, kept until the period ends.
    assert.ok(memory.size() <= 100 * 3, `counters and claims bounded with the users: ${memory.size()}`);
  } finally {
    await alerts.close();
  }
});

/** A usage store that recorded `spent` tokens this period for every token (what a restart seeds from). */
function recorded(spent: number): UsageStore {
  const unused = () => Promise.reject(new Error("not used here"));
  return {
    insert: unused,
    query: unused,
    listRecords: unused,
    deleteOlderThan: unused,
    close: () => Promise.resolve(),
    sumSince: () => Promise.resolve({ tokens: spent, cost: 0 }),
    sumTeamSince: () => Promise.resolve({ tokens: 0, cost: 0 }),
  };
}

Deno.test("budget alerts: after a restart, spend recorded before it counts towards the next threshold", async () => {
  // The seed reads the real clock's period; the engine must be in the same one.
  const { store, quiet } = tracked(createMemoryCounterStore());
  const receiver = posts();
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [80] }]);
  const identity = token({ budget: { tokens: 1000, period: "month" } });
  const logger = createMemoryLogger();
  assert.deepEqual(
    await seedTokenBudgets([identity], recorded(700), store, logger, alertSeeding(config, store)),
    [],
  );
  const alerts = createAlerts(config, store, { fetch: receiver.fetch });
  const engine = createPolicyEngine(store, alertHooks(alerts, config, store, () => {}));
  try {
    const req = { identity, endpoint: "chat" as const, model: model(), estimatedTokens: 150 };
    await (await engine.admit(req)).settle({ tokens: 150, cost: 0 });
    await quiet();
    assert.deepEqual(receiver.bodies.map((b) => [b.threshold, b.used]), [[80, 850]]);
  } finally {
    await alerts.close();
  }
});

Deno.test("budget alerts: a restart does not post again the thresholds that spend recorded before it passed", async () => {
  const { store, quiet } = tracked(createMemoryCounterStore());
  const receiver = posts();
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [50, 80, 100] }]);
  const identity = token({ budget: { tokens: 1000, period: "month" } });
  // The run before posted 50 % and 80 %; its claims were in its memory. This one starts from 850 recorded.
  await seedTokenBudgets([identity], recorded(850), store, createMemoryLogger(), alertSeeding(config, store));
  const alerts = createAlerts(config, store, { fetch: receiver.fetch });
  const engine = createPolicyEngine(store, alertHooks(alerts, config, store, () => {}));
  try {
    const req = { identity, endpoint: "chat" as const, model: model(), estimatedTokens: 10 };
    await (await engine.admit(req)).settle({ tokens: 10, cost: 0 });
    await quiet();
    assert.equal(receiver.bodies.length, 0, "50 % and 80 % were posted before the restart");
    await (await engine.admit(req)).settle({ tokens: 150, cost: 0 });
    await quiet();
    assert.deepEqual(receiver.bodies.map((b) => [b.threshold, b.used]), [[100, 1010]]);
  } finally {
    await alerts.close();
  }
});

Deno.test("budget alerts: a budget that starts denying posts its 100 % once, with the spend reached", async () => {
  const c = clock();
  const { store, quiet } = tracked(createMemoryCounterStore(c.now));
  const receiver = posts();
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", budget_thresholds: [80, 100] }]);
  const alerts = createAlerts(config, store, { now: c.now, fetch: receiver.fetch });
  const engine = createPolicyEngine(store, { now: c.now, ...alertHooks(alerts, config, store, () => {}) });
  const identity = token({ budget: { tokens: 1000, period: "month" } });
  const req = { identity, endpoint: "chat" as const, model: model(), estimatedTokens: 100 };
  try {
    // Each request reserves 100 and spends 95: the tenth (950 + 100 > 1000) and every later one are denied,
    // so spend stops at 950 and never reaches the limit.
    let denied = 0;
    for (let i = 0; i < 15; i++) {
      try {
        await (await engine.admit(req)).settle({ tokens: 95, cost: 0 });
      } catch {
        denied++;
      }
      await quiet();
    }
    assert.equal(denied, 5);
    assert.deepEqual(receiver.bodies.map((b) => [b.threshold, b.used, b.limit]), [[80, 855, 1000], [
      100,
      950,
      1000,
    ]]);
  } finally {
    await alerts.close();
  }
});
