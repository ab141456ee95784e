import assert from "node:assert/strict";
import type { ResolvedToken } from "../config/types.ts";
import { budgetAmount, budgetCheck, budgetKey, budgetPeriod, chargeBudget, seedBudget } from "./budgets.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";

Deno.test("budgetPeriod: UTC days and months with their bounds", () => {
  const t = Date.UTC(2026, 10, 22, 23, 59, 59, 999);
  assert.deepEqual(budgetPeriod("day", t), {
    id: "2026-11-22",
    start: Date.UTC(2026, 10, 22),
    end: Date.UTC(2026, 10, 23),
  });
  assert.deepEqual(budgetPeriod("month", t), {
    id: "2026-11",
    start: Date.UTC(2026, 10, 1),
    end: Date.UTC(2026, 11, 1),
  });
  assert.deepEqual(budgetPeriod("day", Date.UTC(2026, 11, 31, 12)), {
    id: "2026-12-31",
    start: Date.UTC(2026, 11, 31),
    end: Date.UTC(2027, 0, 1),
  });
  assert.equal(budgetPeriod("month", Date.UTC(2026, 11, 31, 12)).end, Date.UTC(2027, 0, 1));
  assert.equal(budgetPeriod("day", Date.UTC(2028, 1, 29)).id, "2028-02-29");
});

Deno.test("budgetCheck and chargeBudget use the token's identity, unit and current period", async () => {
  const t = Date.UTC(2026, 0, 5, 8);
  const store = createMemoryCounterStore(() => t);
  const token = {
    name: "svc",
    id: "tok_1",
    budget: { cost: 5, period: "month" },
  } as unknown as ResolvedToken;
  assert.deepEqual(budgetCheck(token, t)?.check, {
    kind: "period",
    key: "token:tok_1:budget:cost",
    period: "2026-01",
    limit: 5,
    amount: 0,
    expiresAt: Date.UTC(2026, 1, 1) + 3_600_000,
  });
  await chargeBudget(store, token, { tokens: 1000, cost: 0.25 }, t);
  await chargeBudget(store, token, { tokens: 1000, cost: Number.NaN }, t);
  await chargeBudget(store, token, { tokens: 1000, cost: -3 }, t);
  assert.equal(await store.periodGet(budgetKey("tok_1", "cost"), "2026-01"), 0.25);
  assert.equal(budgetCheck({ ...token, budget: null }, t), null);
  // A token reissued under the same name is another identity: it starts its own budget.
  const reissued = { ...token, id: "tok_2" } as ResolvedToken;
  assert.equal(budgetCheck(reissued, t)?.check.key, "token:tok_2:budget:cost");
  assert.equal(await store.periodGet(budgetKey("tok_2", "cost"), "2026-01"), 0);
});

Deno.test("seedBudget counts in the budget's unit and only ever raises", async () => {
  const t = Date.UTC(2026, 10, 22, 12);
  const store = createMemoryCounterStore(() => t);
  const budget = { tokens: 100, period: "day" } as const;
  assert.equal(await seedBudget(store, "svc", budget, { tokens: 40, cost: 9 }, t), 40);
  assert.equal(await seedBudget(store, "svc", budget, { tokens: 10, cost: 9 }, t), 40);
  assert.equal(await store.periodGet("token:svc:budget:tokens", "2026-11-22"), 40);
});

Deno.test("budgetAmount: token counts whole, money without the noise of summed doubles", () => {
  assert.equal(budgetAmount(1_234_567), "1234567");
  assert.equal(budgetAmount(0.009000000000000005), "0.009");
  assert.equal(budgetAmount(0.010999999999999996), "0.011");
  assert.equal(budgetAmount(4.973), "4.973");
  assert.equal(budgetAmount(0.02), "0.02");
});
