/**
 * A request still running when its end user is forgotten under `max_users`, and the user back meanwhile with
 * a request of its own: the counters the returning request made afresh are not the ones the first request
 * reserved on, so the first one's refund must not land on them (it would give the user back budget or tokens
 * per minute the returning request is using). Its real spend beyond the reservation is still counted there.
 * On the engine's own store, through a worker's proxy of the primary's, and on `fail_open`'s local limiter.
 */
import assert from "node:assert/strict";
import type { EndUserLimitsConfig } from "../config/schema.ts";
import { Channel, type MessagePortLike } from "../workers/channel.ts";
import { counterMethods, WorkerLedger } from "../workers/primary_methods.ts";
import { remoteCounterStore } from "../workers/remote_stores.ts";
import type { CounterStore } from "./counter_store.ts";
import { EndUserTracker } from "./end_users.ts";
import { createPolicyEngine, type PolicyEngine } from "./engine.ts";
import { clock, denial, model, token } from "./engine_test_helpers.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { createResilientCounterStore } from "./resilient_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import type { PolicyRequest } from "./types.ts";

/** Two users tracked; alice's budget 150 tokens a day, or her tokens per minute 100. */
function request(limits: Omit<EndUserLimitsConfig, "max_users">) {
  const identity = token({ endUserLimits: { max_users: 2, ...limits } });
  return (user: string, estimatedTokens: number): PolicyRequest => ({
    identity,
    endpoint: "chat",
    model: model(),
    body: { model: "chat-default", messages: [{ role: "user", content: "hi" }], user },
    estimatedTokens,
  });
}

/** The engines under test: each over a store that forgets end users' counters, the clock standing still. */
const engines: [string, () => { engine: PolicyEngine; close: () => void }][] = [
  ["in memory", () => {
    const c = clock();
    return { engine: createPolicyEngine(createMemoryCounterStore(c.now), { now: c.now }), close: () => {} };
  }],
  ["a worker of the primary's memory store", () => {
    const c = clock();
    const { port1, port2 } = new MessageChannel();
    const worker = new Channel(port1 as unknown as MessagePortLike);
    const primary = new Channel(port2 as unknown as MessagePortLike);
    primary.serve(counterMethods(createMemoryCounterStore(c.now), new WorkerLedger(), new EndUserTracker()));
    const engine = createPolicyEngine(remoteCounterStore(worker), { now: c.now });
    return {
      engine,
      close: () => {
        port1.close();
        port2.close();
      },
    };
  }],
  ["fail_open's local limiter, Redis away", () => {
    const c = clock();
    const shared: CounterStore = switchableStore(createMemoryCounterStore(c.now), { down: true }).store;
    const store = createResilientCounterStore(shared, {
      onFailure: "fail_open",
      expectedReplicas: 1,
      probeIntervalMs: 0,
      now: c.now,
    });
    return { engine: createPolicyEngine(store, { now: c.now }), close: () => {} };
  }],
];

/** Alice's request `first` runs while she is forgotten (two other users seen), then she is back. */
async function forgetAlice(engine: PolicyEngine, req: ReturnType<typeof request>): Promise<void> {
  for (const user of ["x1", "x2"]) await (await engine.admit(req(user, 10))).settle({ tokens: 10, cost: 0 });
}

for (const [name, make] of engines) {
  Deno.test(`end users (${name}): a refund of a request whose user was forgotten gives the user back no budget`, async () => {
    const { engine, close } = make();
    try {
      const req = request({ budget: { tokens: 150, period: "day" } });
      const first = await engine.admit(req("alice", 100));
      await forgetAlice(engine, req);
      const back = await engine.admit(req("alice", 100)); // her counter afresh: 100 of 150
      // The first request used nothing: its refund of 100 was of the counter forgotten, not this one.
      await first.settle({ tokens: 0, cost: 0 });
      assert.equal((await denial(engine.admit(req("alice", 100)))).rule, "end_user.budget");
      await back.settle({ tokens: 100, cost: 0 });
      await engine.admit(req("alice", 50)); // what she has left
    } finally {
      close();
    }
  });

  Deno.test(`end users (${name}): a TPM refund of a request whose user was forgotten gives the user back no tokens`, async () => {
    const { engine, close } = make();
    try {
      const req = request({ tpm: 100 });
      const first = await engine.admit(req("alice", 80));
      await forgetAlice(engine, req);
      await engine.admit(req("alice", 80)); // her bucket afresh: 20 left this minute
      await first.settle({ tokens: 0, cost: 0 });
      assert.equal((await denial(engine.admit(req("alice", 80)))).rule, "end_user.tpm");
    } finally {
      close();
    }
  });

  Deno.test(`end users (${name}): what a forgotten user's request used beyond its reservation is counted on her counter`, async () => {
    const { engine, close } = make();
    try {
      const req = request({ budget: { tokens: 150, period: "day" } });
      const first = await engine.admit(req("alice", 10));
      await forgetAlice(engine, req);
      const back = await engine.admit(req("alice", 10));
      await first.settle({ tokens: 60, cost: 0 }); // 50 beyond its reservation: real spend, counted
      await back.settle({ tokens: 10, cost: 0 });
      assert.equal((await denial(engine.admit(req("alice", 100)))).rule, "end_user.budget");
      await engine.admit(req("alice", 90));
    } finally {
      close();
    }
  });
}
