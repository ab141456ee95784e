/**
 * The engine's hooks reach the alerts: each denial by a counted limit names its rule and owner; each settled
 * budget is read back and reported with its settled spend; a budget's denial is reported as such. Only the hooks a receiver
 * asked for are installed.
 */
import assert from "node:assert/strict";
import type { AlertsConfig } from "../config/alerts_schema.ts";
import { createMemoryCounterStore } from "../policy/memory_counter_store.ts";
import { createPolicyEngine } from "../policy/engine.ts";
import { clock, denial, model, token } from "../policy/engine_test_helpers.ts";
import type { Alerts, BudgetDeniedEvent, BudgetUsedEvent, DeniedEvent } from "./alerts.ts";
import { alertsSchema } from "../config/alerts_schema.ts";
import { createAlerts } from "./alerts.ts";
import { alertHooks } from "./policy_hooks.ts";

function recording() {
  const budgets: BudgetUsedEvent[] = [];
  const denials: DeniedEvent[] = [];
  const budgetDenials: BudgetDeniedEvent[] = [];
  const alerts: Alerts = {
    budgetUsed: (e) => budgets.push(e),
    budgetDenied: (e) => budgetDenials.push(e),
    denied: (e) => denials.push(e),
    ejected: () => {},
    recent: () => [],
    close: () => Promise.resolve(),
  };
  return { alerts, budgets, denials, budgetDenials };
}

const RECEIVER = { url: "http://127.0.0.1:9/x", ejections: false, timeout: 1000, retries: 0 };

Deno.test("alert hooks: budgets read back after settling, denials with rule and owner", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const { alerts, budgets, denials } = recording();
  const config: AlertsConfig = [{ ...RECEIVER, budget_thresholds: [50], denials: { count: 1, minutes: 1 } }];
  const engine = createPolicyEngine(store, { now: c.now, ...alertHooks(alerts, config, store, () => {}) });
  const identity = token({
    limits: { rpm: 1 },
    budget: { tokens: 100, period: "day" },
    team: {
      name: "payments",
      id: "team_payments",
      description: null,
      budget: { tokens: 1000, period: "month" },
      limits: null,
      patterns: null,
    },
  });
  const req = { identity, endpoint: "chat" as const, model: model(), estimatedTokens: 10 };
  await (await engine.admit(req)).settle({ tokens: 60, cost: 0 });
  const deadline = Date.now() + 30_000; // bounds a failure only: the budgets come in milliseconds
  while (budgets.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  const byScope = Object.fromEntries(budgets.map((b) => [b.scope, b]));
  assert.equal(byScope.token.used, 60);
  assert.equal(byScope.token.limit, 100);
  assert.equal(byScope.token.name, "web-prod");
  assert.equal(byScope.team.used, 60);
  assert.equal(byScope.team.limit, 1000);
  assert.equal(byScope.team.name, "payments");
  assert.equal(byScope.team.period.id, "2026-11");

  await denial(engine.admit(req));
  assert.deepEqual(denials, [{ rule: "token.rpm", owner: "token web-prod", key: "token:cfg_web-prod:rpm" }]);
});

Deno.test("alert hooks: none installed for kinds no receiver asked for", () => {
  const { alerts } = recording();
  const store = createMemoryCounterStore();
  assert.deepEqual(Object.keys(alertHooks(alerts, [{ ...RECEIVER, ejections: true }], store, () => {})), []);
});

Deno.test("alert hooks: denials are counted per end user, even for ids that read the same once cut short", async () => {
  const c = clock();
  const store = createMemoryCounterStore(c.now);
  const posted: Record<string, unknown>[] = [];
  const fetch: typeof globalThis.fetch = (_url, init) => {
    posted.push(JSON.parse(String(init?.body)));
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  const config = alertsSchema.parse([{ url: "http://127.0.0.1:9/hook", denials: { count: 3, minutes: 5 } }]);
  const alerts = createAlerts(config, store, { now: c.now, fetch });
  const engine = createPolicyEngine(store, { now: c.now, ...alertHooks(alerts, config, store, () => {}) });
  const identity = token({ endUserLimits: { rpm: 1, max_users: 100 } });
  // Two users whose ids share their first 64 characters, which is all a denial's message shows of them.
  const prefix = "org-acme/department-finance/project-ledger/service-reconciler/u";
  const admit = (user: string) =>
    engine.admit({
      identity,
      endpoint: "chat",
      model: model(),
      estimatedTokens: 1,
      body: { model: "chat-default", messages: [], user },
    });
  const [alice, bob] = [`${prefix}ser-alice`, `${prefix}ser-bob`];
  for (const user of [alice, bob]) {
    await admit(user);
    await denial(admit(user));
    await denial(admit(user));
  }
  // The memory store answers in microtasks and the fake receiver at once: a macrotask sees all of it.
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(posted.length, 0, "two denials each, none more than three");
  await denial(admit(alice));
  await denial(admit(alice));
  await alerts.close();
  assert.deepEqual(posted.map((p) => [p.rule, p.count]), [["end_user.rpm", 3]], "alice's fourth denial");
});
