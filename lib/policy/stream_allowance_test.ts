import assert from "node:assert/strict";
import type { BudgetConfig } from "../config/schema.ts";
import type { ResolvedModel, ResolvedToken } from "../config/types.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createPolicyEngine } from "./engine.ts";

function token(budget: BudgetConfig | null): ResolvedToken {
  return {
    name: "t",
    environment: "production",
    sha256: "0".repeat(64),
    patterns: ["*"],
    aliases: new Set(["chat"]),
    expiresAt: null,
    disabled: false,
    limits: null,
    budget,
    endpoints: null,
    maxTokens: null,
    id: "cfg_t",
  };
}

const MODEL: ResolvedModel = {
  alias: "chat",
  type: "chat",
  strategy: "fallback",
  targets: [],
  ownedBy: "me",
  created: 0,
  limits: null,
  contentRules: [],
  strict: false,
};

function setup(budget: BudgetConfig | null) {
  const now = () => Date.UTC(2026, 10, 22, 12);
  const store = createMemoryCounterStore(now);
  const engine = createPolicyEngine(store, { now });
  const identity = token(budget);
  const admit = (estimatedTokens: number) =>
    engine.admit({ identity, endpoint: "chat", model: MODEL, estimatedTokens });
  return { store, admit };
}

Deno.test("stream allowance: the request's reservation plus what others left of the budget, read at admission", async () => {
  const { admit } = setup({ tokens: 1_000, period: "day", stop_streams: true });
  const first = await admit(300);
  assert.deepEqual(first.stream, { unit: "tokens", allowance: 1_000 }, "alone: the whole budget");
  const second = await admit(200);
  // The first request's 300 are reserved: the second may use its own 200 and the 500 left.
  assert.deepEqual(second.stream, { unit: "tokens", allowance: 700 });
  await first.settle({ tokens: 100, cost: 0 });
  const third = await admit(100);
  // 100 spent by the first, 200 reserved by the second: 700 left for the third.
  assert.deepEqual(third.stream, { unit: "tokens", allowance: 700 });
});

Deno.test("stream allowance: none without stop_streams, or without a budget", async () => {
  assert.equal((await setup({ tokens: 1_000, period: "day" }).admit(10)).stream ?? null, null);
  assert.equal(
    (await setup({ tokens: 1_000, period: "day", stop_streams: false }).admit(10)).stream ?? null,
    null,
  );
  assert.equal((await setup(null).admit(10)).stream ?? null, null);
});
