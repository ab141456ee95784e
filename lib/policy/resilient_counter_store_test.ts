import assert from "node:assert/strict";
import type { Logger } from "../log.ts";
import { GatewayError } from "../errors.ts";
import { GatewayMetrics } from "../metrics/gateway_metrics.ts";
import type { BucketCheck } from "./counter_store.ts";
import { createMemoryCounterStore } from "./memory_counter_store.ts";
import { switchableStore } from "./switchable_store_test_helpers.ts";
import { createResilientCounterStore, type OnFailure } from "./resilient_counter_store.ts";

/** A shared store that can be switched off: every call then fails, as a Redis call that timed out. */
function switchable(now: () => number) {
  const state = { down: false, calls: 0 };
  return { store: switchableStore(createMemoryCounterStore(now), state).store, state };
}

function setup(onFailure: OnFailure, expectedReplicas = 3) {
  let t = Date.UTC(2026, 10, 24, 12);
  const now = () => t;
  const { store, state } = switchable(now);
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const log = (level: string) => (msg: string, fields: Record<string, unknown> = {}) =>
    lines.push({ level, msg, fields });
  const logger = { info: log("info"), warn: log("warn"), error: log("error") } as unknown as Logger;
  const metrics = new GatewayMetrics();
  const up = metrics.registry.gauge("store_up", "up", []);
  const fallbacks = metrics.registry.counter("store_fallbacks", "fallbacks", ["mode"]);
  const resilient = createResilientCounterStore(store, {
    onFailure,
    expectedReplicas,
    logger,
    now,
    probeIntervalMs: 500,
    metrics: { up, fallbacks },
  });
  return { resilient, state, lines, up, fallbacks, advance: (ms: number) => t += ms };
}

const rpm = (limit: number): BucketCheck => ({
  kind: "bucket",
  key: "token:t:rpm",
  limit,
  windowMs: 60_000,
  amount: 1,
});

Deno.test("fail_closed: 503 rate_limit_store_unavailable with Retry-After; one log line per change; recovers", async () => {
  const { resilient, state, lines, up, fallbacks, advance } = setup("fail_closed");
  assert.equal((await resilient.reserve([rpm(10)])).ok, true);
  assert.equal(up.get([]), 1);
  state.down = true;
  for (let i = 0; i < 5; i++) {
    const err = await resilient.reserve([rpm(10)]).then(() => null, (e) => e);
    assert.ok(err instanceof GatewayError);
    assert.equal(err.status, 503);
    assert.equal(err.code, "rate_limit_store_unavailable");
    assert.equal(new Headers(err.headers).get("retry-after"), "1");
  }
  // down: only one call per probe interval reaches the store, the rest are answered at once
  assert.equal(state.calls, 2);
  assert.equal(up.get([]), 0);
  assert.equal(fallbacks.get(["fail_closed"]), 5);
  state.down = false;
  // before the next probe, still refused without asking
  await assert.rejects(resilient.reserve([rpm(10)]));
  advance(500);
  assert.equal((await resilient.reserve([rpm(10)])).ok, true);
  assert.equal(resilient.isUp(), true);
  assert.equal(up.get([]), 1);
  assert.deepEqual(lines.map((l) => l.msg), ["rate_limit_store_down", "rate_limit_store_up"]);
  assert.equal(lines[0].fields.error, "Command timed out");
});

Deno.test("fail_open: a local limiter at limit ÷ expected replicas, settled locally even after recovery", async () => {
  const { resilient, state, fallbacks, advance } = setup("fail_open", 3);
  state.down = true;
  const conc = { kind: "concurrency", key: "token:t:concurrent", limit: 7 } as const;
  const admitted = [];
  for (let i = 0; i < 5; i++) {
    const r = await resilient.reserve([conc, rpm(10)]);
    if (r.ok) admitted.push(r);
  }
  // floor(10 / 3) = 3 requests per minute and floor(7 / 3) = 2 in flight: the concurrency limit binds
  assert.equal(admitted.length, 2);
  assert.equal(fallbacks.get(["fail_open"]), 5);
  // Redis comes back: new decisions are shared again, but the local admissions give their slots back locally
  state.down = false;
  advance(500);
  const shared = await resilient.reserve([conc, rpm(10)]);
  assert.equal(shared.ok, true);
  assert.equal(shared.store, undefined, "a shared admission settles with the shared store");
  for (const a of admitted) {
    assert.ok(a.store);
    await a.store.release(conc.key);
    await a.store.adjust(rpm(10), 5);
  }
  const callsBefore = state.calls;
  const local = admitted[0].store!;
  const read = await local.reserve([{ ...conc, limit: 2 }, { ...rpm(3), amount: 0 }]);
  assert.equal(read.results[0].used, 1, "both local slots came back, none went to the shared store");
  assert.equal(state.calls, callsBefore, "local settling never asks the shared store");
});

Deno.test("settling through a down store fails (for the engine to log) and marks it down", async () => {
  const { resilient, state, lines } = setup("fail_closed");
  state.down = true;
  await assert.rejects(resilient.release("token:t:concurrent"));
  assert.equal(resilient.isUp(), false);
  assert.deepEqual(lines.map((l) => l.msg), ["rate_limit_store_down"]);
});
