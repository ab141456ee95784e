/**
 * `serve --workers N`: the primary keeps the one list of end users and their counters; a worker's requests
 * settle there over the channel. A user forgotten under `max_users` while its requests ran is settled without
 * bringing its counters back, as in one process, and a user still tracked holds what it really used.
 */
import assert from "node:assert/strict";
import { createMemoryCounterStore } from "../policy/memory_counter_store.ts";
import { createPolicyEngine } from "../policy/engine.ts";
import { EndUserTracker } from "../policy/end_users.ts";
import { clock, model, token } from "../policy/engine_test_helpers.ts";
import type { Admission } from "../policy/types.ts";
import { Channel, type MessagePortLike } from "./channel.ts";
import { counterMethods, WorkerLedger } from "./primary_methods.ts";
import { remoteCounterStore } from "./remote_stores.ts";

Deno.test("workers: users forgotten on the primary while a worker's requests ran leave no counter there when they settle", async () => {
  const c = clock();
  const counters = createMemoryCounterStore(c.now);
  const { port1, port2 } = new MessageChannel();
  const worker = new Channel(port1 as unknown as MessagePortLike);
  const primary = new Channel(port2 as unknown as MessagePortLike);
  const endUsers = new EndUserTracker();
  primary.serve(counterMethods(counters, new WorkerLedger(), endUsers));
  try {
    const engine = createPolicyEngine(remoteCounterStore(worker), { now: c.now, onBudgetSettled: () => {} });
    const identity = token({
      endUserLimits: { max_users: 50, budget: { tokens: 1_000_000, period: "day" } },
    });
    const running: Admission[] = [];
    for (let i = 0; i < 500; i++) {
      const body = { model: "chat-default", messages: [{ role: "user", content: "hi" }], user: `u-${i}` };
      running.push(
        await engine.admit({ identity, endpoint: "chat", model: model(), body, estimatedTokens: 20 }),
      );
      // Each settles more than its estimate after 100 other users were seen, its own forgotten by then.
      if (running.length > 100) await running.shift()!.settle({ tokens: 30, cost: 0 });
    }
    for (const a of running) await a.settle({ tokens: 30, cost: 0 });
    assert.equal(endUsers.size(), 50);
    // A budget counter and its settled spend per user tracked.
    assert.ok(counters.size() <= 100, `counters bounded with the users: ${counters.size()}`);
    const key = `end_user:token:${identity.id}:u-499:budget:tokens`;
    assert.equal(await counters.periodGet(key, "2026-11-22"), 30);
    assert.equal(await counters.periodGet(`${key}:spent`, "2026-11-22"), 30);
  } finally {
    port1.close();
    port2.close();
  }
});
