import assert from "node:assert/strict";
import type { CounterStore, SettleOps } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine, seedBudget } from "./engine.ts";
import { chatRequest, clock, denial, header, setup, token } from "./engine_test_helpers.ts";

Deno.test("token budget 1000 tokens a day: admits while used < budget, then 429 insufficient_quota; a new UTC day resets", async () => {
  const { c, engine, req } = setup({ budget: { tokens: 1000, period: "day" } });
  const a = await engine.admit(req());
  await a.settle({ tokens: 600, cost: 1 });
  const b = await engine.admit(req());
  await b.settle({ tokens: 600, cost: 1 }); // admitted at 600 < 1000; the total may overshoot
  const err = await denial(engine.admit(req()));
  assert.equal(err.status, 429);
  assert.equal(err.type, "insufficient_quota");
  assert.equal(err.code, "insufficient_quota");
  assert.equal(err.rule, "token.budget");
  assert.equal(header(err, "x-should-retry"), "false");
  assert.equal(header(err, "retry-after"), null);
  assert.equal(
    err.message,
    "You exceeded your current quota: token web-prod has a budget of 1000 tokens per day (UTC) and has used " +
      "1200 in 2026-11-22. The budget resets at 2026-11-23T00:00:00.000Z.",
  );
  c.set(Date.UTC(2026, 10, 22, 23, 59, 59, 999));
  await denial(engine.admit(req()));
  c.set(Date.UTC(2026, 10, 23));
  await engine.admit(req());
});

Deno.test("money budget: settle adds cost; a month budget resets on the 1st (UTC)", async () => {
  const { c, engine, req } = setup({ budget: { cost: 2, period: "month" } });
  for (let i = 0; i < 3; i++) await (await engine.admit(req())).settle({ tokens: 99_999, cost: 0.75 });
  const err = await denial(engine.admit(req()));
  assert.equal(err.code, "insufficient_quota");
  assert.match(err.message, /a budget of a cost of 2 per month \(UTC\) and has used 2\.25 in 2026-11\./);
  c.set(Date.UTC(2026, 11, 1));
  await engine.admit(req());
});

Deno.test("budget is checked last: a budget-denied request takes no rate limit", async () => {
  const { engine, req, store, identity, c } = setup({
    limits: { rpm: 2 },
    budget: { tokens: 10, period: "day" },
  });
  await seedBudget(store, identity.id, identity.budget!, { tokens: 10, cost: 0 }, c.now());
  for (let i = 0; i < 5; i++) assert.equal((await denial(engine.admit(req()))).rule, "token.budget");
  const last = await denial(engine.admit(req()));
  assert.equal(header(last, "x-ratelimit-remaining-requests"), "2");
});

Deno.test("seedBudget raises the counter to stored usage and never double counts", async () => {
  const { engine, req, store, identity, c } = setup({ budget: { tokens: 1000, period: "day" } });
  assert.equal(
    await seedBudget(store, identity.id, identity.budget!, { tokens: 900, cost: 3 }, c.now()),
    900,
  );
  assert.equal(
    await seedBudget(store, identity.id, identity.budget!, { tokens: 900, cost: 3 }, c.now()),
    900,
  );
  await (await engine.admit(req())).settle({ tokens: 100, cost: 0 });
  await denial(engine.admit(req()));
});

Deno.test("settling exactly what was reserved: sent to the store that named it elsewhere, not to the shared one", async () => {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const sent: [string, SettleOps][] = [];
  const settles = (where: string) => (ops: SettleOps) => {
    sent.push([where, ops]);
    return Promise.resolve();
  };
  // A local limiter (fail_open) keeps books of each budget reservation it names until it is settled.
  const local: CounterStore = { ...inner, settle: settles("local") };
  let away = false;
  const shared: CounterStore = {
    ...inner,
    settle: settles("shared"),
    async reserve(checks) {
      const taken = await inner.reserve(checks);
      return away ? { ...taken, store: local, reservation: "local:1" } : { ...taken, reservation: "r1" };
    },
  };
  const engine = createPolicyEngine(shared, { now: c.now });
  const req = chatRequest(token({ budget: { tokens: 1000, period: "day" } }), 100);
  await (await engine.admit(req)).settle({ tokens: 100, cost: 0 });
  assert.deepEqual(sent, [], "nothing to correct: no call to the shared store");
  away = true;
  await (await engine.admit(req)).settle({ tokens: 100, cost: 0 });
  assert.deepEqual(sent, [["local", { release: [], adjust: [], periods: [], reservation: "local:1" }]]);
});
