/**
 * Budgets reserve before they admit: a request's estimate is held against the budget at admission and
 * corrected to its real usage when it settles, so concurrent requests cannot overshoot a budget.
 */
import assert from "node:assert/strict";
import type { BudgetConfig, PriceConfig } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken, RoutedTarget } from "../config/types.ts";
import { budgetKey } from "./budgets.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine, PolicyDenied } from "./engine.ts";
import type { Admission, PolicyRequest } from "./types.ts";

const DAY = "2026-11-22";

function setup(budget: BudgetConfig, prices: PriceConfig[] = []) {
  let t = Date.UTC(2026, 10, 22, 12);
  const now = () => t;
  const store = createMemoryCounterStore(now);
  const engine = createPolicyEngine(store, { now });
  const identity = {
    name: "svc",
    environment: "test",
    sha256: "0".repeat(64),
    patterns: ["*"],
    aliases: new Set(["chat"]),
    expiresAt: null,
    disabled: false,
    limits: null,
    budget,
    endpoints: null,
    maxTokens: null,
    id: "tok_svc",
  } as ResolvedToken;
  const model = {
    alias: "chat",
    type: "chat",
    strategy: "fallback",
    targets: prices.map((price) => ({ price }) as unknown as RoutedTarget),
    ownedBy: "me",
    created: 0,
    limits: null,
    contentRules: [],
    strict: false,
  } as ResolvedModel;
  const req = (estimatedTokens: number): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model,
    estimatedTokens,
  });
  return { store, engine, req, setTime: (ms: number) => t = ms };
}

async function fire(n: number, admit: () => Promise<Admission>) {
  const results = await Promise.allSettled(Array.from({ length: n }, admit));
  const admitted: Admission[] = [];
  let denied = 0;
  for (const r of results) {
    if (r.status === "fulfilled") admitted.push(r.value);
    else if (r.reason instanceof PolicyDenied && r.reason.rule === "token.budget") denied++;
    else throw r.reason;
  }
  return { admitted, denied };
}

Deno.test("budget: concurrent requests reserve their estimates, so 1000 tokens admit exactly 10 of 100", async () => {
  const { engine, req, store } = setup({ tokens: 1000, period: "day" });
  const { admitted, denied } = await fire(30, () => engine.admit(req(100)));
  assert.equal(admitted.length, 10);
  assert.equal(denied, 20);
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 1000);
  // settling corrects each reservation to the real usage: 40 each gives back 60 each
  await Promise.all(admitted.map((a) => a.settle({ tokens: 40, cost: 0 })));
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 400);
  // settling again counts nothing (idempotent)
  await admitted[0].settle({ tokens: 999, cost: 0 });
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 400);
});

Deno.test("budget: an aborted request gives back what it did not use; an overrun is charged in full", async () => {
  const { engine, req, store } = setup({ tokens: 1000, period: "day" });
  const aborted = await engine.admit(req(300));
  const overrun = await engine.admit(req(300));
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 600);
  await aborted.settle({ tokens: 0, cost: 0 });
  await overrun.settle({ tokens: 450, cost: 0 });
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 450);
  // 550 left: a request estimated at 551 does not fit, one at 550 does
  await assert.rejects(engine.admit(req(551)), PolicyDenied);
  await engine.admit(req(550));
});

Deno.test("budget: an estimate above the whole budget reserves the budget, so it can run on an untouched one", async () => {
  const { engine, req, store } = setup({ tokens: 1000, period: "day" });
  const big = await engine.admit(req(50_000));
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 1000);
  await assert.rejects(engine.admit(req(1)), PolicyDenied);
  await big.settle({ tokens: 700, cost: 0 });
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 700);
});

Deno.test("budget: a money budget reserves the estimate at the alias's dearest rate", async () => {
  // $2 per 1M input, $8 per 1M output on one target, $4/$4 on another: 8 per 1M is the rate
  const { engine, req, store } = setup({ cost: 1, period: "month" }, [{ input: 2, output: 8 }, {
    input: 4,
    output: 4,
  }]);
  const a = await engine.admit(req(100_000)); // reserves 0.8
  assert.equal(await store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 0.8);
  await assert.rejects(engine.admit(req(30_000)), PolicyDenied); // 0.24 more would cross 1
  await a.settle({ tokens: 100_000, cost: 0.5 });
  assert.equal(await store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 0.5);
  await engine.admit(req(30_000));
});

Deno.test("budget: the reservation rate counts a long-context tier's output, which settling may charge", async () => {
  // Claude Sonnet 4's price: $3 / $15, and $6 / $22.50 for a request above 200K prompt tokens. A request's
  // prompt size is not known at admission, so 22.5 per 1M is the dearest rate it may settle at.
  const tiered = { input: 3, output: 15, long_context: { above: 200_000, input: 6, output: 22.5 } };
  const { engine, req, store } = setup({ cost: 10, period: "month" }, [tiered]);
  await engine.admit(req(100_000));
  assert.equal(await store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 2.25);
  // Reasoning priced apart from output is a rate the completion may be charged at too.
  const reasoning = setup({ cost: 10, period: "month" }, [{ input: 1, output: 4, reasoning: 12 }]);
  await reasoning.engine.admit(reasoning.req(100_000));
  assert.equal(await reasoning.store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 1.2);
});

Deno.test("budget: the reservation rate counts audio and cache-write rates, not the per-call web search", async () => {
  // gpt-4o-audio-preview's price: text $2.50 / $10, audio $40 in / $80 out per 1M. A completion of audio
  // tokens settles at 80, so two such requests at once must not both fit a budget that holds one.
  const audio = setup({ cost: 10, period: "month" }, [{
    input: 2.5,
    output: 10,
    audio_input: 40,
    audio_output: 80,
  }]);
  await audio.engine.admit(audio.req(100_000));
  assert.equal(await audio.store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 8);
  // A cache write above every other rate (a made-up price; settling charges it on written prompt tokens).
  const write = setup({ cost: 10, period: "month" }, [{ input: 1, output: 2, cache_write_1h: 5 }]);
  await write.engine.admit(write.req(100_000));
  assert.equal(await write.store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 0.5);
  // $25 per 1,000 searches is per call: it is not a per-token rate.
  const search = setup({ cost: 10, period: "month" }, [{ input: 1, output: 2, web_search_per_1k: 25 }]);
  await search.engine.admit(search.req(100_000));
  assert.equal(await search.store.periodGet(budgetKey("tok_svc", "cost"), "2026-11"), 0.2);
});

Deno.test("budget: a request settles against the period it was admitted in", async () => {
  const { engine, req, store, setTime } = setup({ tokens: 1000, period: "day" });
  setTime(Date.UTC(2026, 10, 22, 23, 59, 59));
  const late = await engine.admit(req(500));
  setTime(Date.UTC(2026, 10, 23, 0, 0, 1));
  await late.settle({ tokens: 200, cost: 0 });
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), DAY), 200);
  assert.equal(await store.periodGet(budgetKey("tok_svc", "tokens"), "2026-11-23"), 0);
});
