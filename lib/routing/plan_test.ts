import assert from "node:assert/strict";
import type { ResolvedModel, RoutedTarget } from "../config/types.ts";
import { orderTargets, seededRandom } from "./plan.ts";

const target = (provider: string, weight: number, fallbackOnly?: boolean) =>
  ({
    provider,
    model: "m",
    key: provider,
    weight,
    ...(fallbackOnly ? { fallbackOnly } : {}),
  }) as RoutedTarget;

Deno.test("order: a fallback-only target comes after every other, whatever the strategy, weight or latency", () => {
  // The fallback-only targets are heavy and fast: by weight or latency alone they would mostly go first.
  const targets = [
    target("chat-a", 1000, true),
    target("native-a", 1),
    target("chat-b", 1000, true),
    target("native-b", 1),
  ];
  const latency = (t: RoutedTarget) => (t.fallbackOnly ? 1 : 900);
  for (const strategy of ["fallback", "weighted", "latency"] as const) {
    const model = { alias: "a", strategy, targets } as unknown as ResolvedModel;
    const firsts = new Set<string>();
    for (let seed = 1; seed <= 50; seed++) {
      const order = orderTargets(model, seededRandom(seed), latency).map((t) => t.provider);
      assert.equal(order.length, 4);
      assert.deepEqual(order.slice(2).sort(), ["chat-a", "chat-b"], `${strategy} seed ${seed}: ${order}`);
      firsts.add(order[0]);
    }
    // Among the first group, the strategy still applies (the weighted ones share the first place).
    if (strategy === "fallback") assert.deepEqual([...firsts], ["native-a"]);
    else assert.deepEqual([...firsts].sort(), ["native-a", "native-b"], strategy);
  }
});

Deno.test("order: without fallback-only targets the strategy's order is unchanged", () => {
  const targets = [target("a", 1), target("b", 3)];
  const model = { alias: "a", strategy: "weighted", targets } as unknown as ResolvedModel;
  const orders = new Set<string>();
  for (let seed = 1; seed <= 40; seed++) {
    orders.add(orderTargets(model, seededRandom(seed), () => null).map((t) => t.provider).join(","));
  }
  assert.deepEqual([...orders].sort(), ["a,b", "b,a"]);
});
