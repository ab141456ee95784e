/**
 * A worker's proxy of the counters over a real channel to the primary's methods: an admission the primary's
 * local limiter decided (Redis away, `fail_open`) settles on that limiter from what it took (each amount
 * capped at the replica's share), as in one process.
 */
import assert from "node:assert/strict";
import type { Check, CounterStore } from "../policy/counter_store.ts";
import { createPolicyEngine } from "../policy/engine.ts";
import { EndUserTracker } from "../policy/end_users.ts";
import { clock, model, token } from "../policy/engine_test_helpers.ts";
import { createResilientCounterStore } from "../policy/resilient_counter_store.ts";
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
