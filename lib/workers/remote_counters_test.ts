/**
 * A worker's proxy of the counters over a real channel to the primary's methods: an admission the primary's
 * local limiter decided (Redis away, `fail_open`) settles on that limiter from what it took (each amount
 * capped at the replica's share), and by its name there (what its refund may take back from the shared
 * counter), as in one process.
 */
import assert from "node:assert/strict";
import type { Check, CounterStore, PeriodCheck } from "../policy/counter_store.ts";
import { createMemoryCounterStore } from "../policy/memory_counter_store.ts";
import { createPolicyEngine } from "../policy/engine.ts";
import { EndUserTracker } from "../policy/end_users.ts";
import { clock, model, token } from "../policy/engine_test_helpers.ts";
import { createResilientCounterStore } from "../policy/resilient_counter_store.ts";
import { switchableStore } from "../policy/switchable_store_test_helpers.ts";
import { Channel, type MessagePortLike } from "./channel.ts";
import { counterMethods, WorkerLedger } from "./primary_methods.ts";
import { remoteCounterStore } from "./remote_stores.ts";

/** A primary whose shared store is down (fail_open over 4 replicas), served to a worker over a real channel. */
function primaryDown() {
  const c = clock();
  const fail = () => Promise.reject(new Error("Command timed out"));
  const down: CounterStore = {
    reserve: fail,
    adjust: fail,
    release: fail,
    periodGet: fail,
    periodAdd: fail,
    periodRaise: fail,
    peek: fail,
  };
  const counters = createResilientCounterStore(down, {
    onFailure: "fail_open",
    expectedReplicas: 4,
    now: c.now,
  });
  const { port1, port2 } = new MessageChannel();
  const worker = new Channel(port1 as unknown as MessagePortLike);
  const primary = new Channel(port2 as unknown as MessagePortLike);
  primary.serve(counterMethods(counters, new WorkerLedger(), new EndUserTracker()));
  const close = () => {
    port1.close();
    port2.close();
  };
  return { c, counters, worker, close };
}

Deno.test("workers, fail_open: a locally admitted request is settled on the primary's limiter from what it took", async () => {
  const { c, counters, worker, close } = primaryDown();
  try {
    const engine = createPolicyEngine(remoteCounterStore(worker), { now: c.now });
    const identity = token({ limits: { tpm: 1000 }, budget: { tokens: 1000, period: "day" } });
    const body = { model: "chat-default", messages: [{ role: "user", content: "hi" }] };
    // tpm and budget 1000 over 4 replicas: charged and reserved 250 of the 600 estimated; 600 really used.
    const a = await engine.admit({ identity, endpoint: "chat", model: model(), body, estimatedTokens: 600 });
    await a.settle({ tokens: 600, cost: 0 });
    const checks: Check[] = [
      { kind: "bucket", key: `token:${identity.id}:tpm`, limit: 1000, windowMs: 60_000, amount: 0 },
      { kind: "period", key: `token:${identity.id}:budget:tokens`, period: "2026-11-22", limit: 1000 },
    ];
    const peek = await counters.peek!(checks);
    assert.equal(peek.source, "local");
    assert.deepEqual(peek.results.map((r) => r.used), [600, 600]);
  } finally {
    close();
  }
});

Deno.test("workers, fail_open: a worker's stream under stop_streams is allowed what the primary's limiter took", async () => {
  const { c, worker, close } = primaryDown();
  try {
    const engine = createPolicyEngine(remoteCounterStore(worker), { now: c.now });
    const identity = token({ budget: { tokens: 1000, period: "day", stop_streams: true } });
    // A share of 250: the 600 estimated is reserved as 250, and nothing is left after it, as in one process.
    const a = await engine.admit({ identity, endpoint: "chat", model: model(), estimatedTokens: 600 });
    assert.deepEqual(a.stream, { unit: "tokens", allowance: 250 });
  } finally {
    close();
  }
});

Deno.test("workers, fail_open: a worker's refund takes back only what its own reservation got onto Redis", async () => {
  const c = clock();
  const inner = createMemoryCounterStore(c.now);
  const state = { down: false, settleFails: false };
  const { store: switched, guard } = switchableStore(inner, state);
  // A shared store whose hand-over settlement can fail (never applied) while its reads answer.
  const shared: CounterStore = {
    ...switched,
    settle: (ops) =>
      guard(async () => {
        if (state.settleFails) throw new Error("Command timed out");
        for (const p of ops.periods) await inner.periodAdd(p.key, p.period, p.amount, p.expiresAt);
      }),
  };
  const counters = createResilientCounterStore(shared, {
    onFailure: "fail_open",
    expectedReplicas: 1,
    probeIntervalMs: 0,
    now: c.now,
  });
  const { port1, port2 } = new MessageChannel();
  const primary = new Channel(port2 as unknown as MessagePortLike);
  primary.serve(counterMethods(counters, new WorkerLedger(), new EndUserTracker()));
  try {
    const engine = createPolicyEngine(remoteCounterStore(new Channel(port1 as unknown as MessagePortLike)), {
      now: c.now,
    });
    const identity = token({ budget: { tokens: 1000, period: "day" } });
    const budget: PeriodCheck = {
      kind: "period",
      key: `token:${identity.id}:budget:tokens`,
      period: "2026-11-22",
      limit: 1000,
    };
    const admit = () => engine.admit({ identity, endpoint: "chat", model: model(), estimatedTokens: 100 });
    /** Redis answers again; the read that notices hands the outage's spend over. */
    const recover = async () => {
      state.down = false;
      await counters.peek!([budget]);
    };
    await inner.periodAdd(budget.key, budget.period, 200, c.now() + 86_400_000); // spent before
    // A first outage: 100 reserved, handed over; its refund of 90 afterwards follows on.
    state.down = true;
    const first = await admit();
    await recover();
    assert.equal(await inner.periodGet(budget.key, budget.period), 300);
    await first.settle({ tokens: 10, cost: 0 });
    assert.equal(await inner.periodGet(budget.key, budget.period), 210);
    // A second outage: 100 reserved, in a hand-over that fails; its refund takes back none of the first's 10.
    state.down = true;
    const second = await admit();
    state.settleFails = true;
    await recover();
    assert.equal(counters.isUp(), false);
    state.settleFails = false;
    await second.settle({ tokens: 0, cost: 0 });
    await recover();
    assert.equal(counters.isUp(), true);
    assert.equal(await inner.periodGet(budget.key, budget.period), 210);
  } finally {
    port1.close();
    port2.close();
  }
});
