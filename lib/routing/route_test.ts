import assert from "node:assert/strict";
import type { RoutedTarget } from "../config/types.ts";
import { GatewayError, invalidRequest } from "../errors.ts";
import { orderTargets, seededRandom } from "./plan.ts";
import { type AttemptRecord, NoUpstreamCall, route } from "./route.ts";
import { alias, deps, scripted, SETTINGS, signal, target, upstream } from "./route_test_helpers.ts";

Deno.test("route: fallback retries a 5xx once on the same target, then falls back to the next", async () => {
  const { deps: d, sleeps } = deps();
  const { calls, attempt } = scripted({ a: [upstream(500), upstream(503)] });
  const attempts: AttemptRecord[] = [];
  const routed = await route(
    alias("fallback", [target("a"), target("b")]),
    SETTINGS,
    d,
    signal,
    attempts,
    attempt,
  );
  assert.equal(routed.value, "b answered");
  assert.deepEqual(calls, ["a", "a", "b"]);
  assert.deepEqual(attempts.map((a) => a.outcome), ["u500", "u503", "ok"]);
  assert.equal(sleeps.length, 1);
  assert.ok(sleeps[0] >= 0 && sleeps[0] <= SETTINGS.backoff_base, "full jitter below the first backoff step");
});

Deno.test("route: a client error (400) is never retried nor sent to another target", async () => {
  const { deps: d, sleeps } = deps();
  const { calls, attempt } = scripted({ a: [invalidRequest("bad temperature", "temperature")] });
  const attempts: AttemptRecord[] = [];
  await assert.rejects(
    route(alias("fallback", [target("a"), target("b")]), SETTINGS, d, signal, attempts, attempt),
    (err: unknown) => err instanceof GatewayError && err.status === 400 && err.param === "temperature",
  );
  assert.deepEqual(calls, ["a"]);
  assert.deepEqual(sleeps, []);
});

Deno.test("route: Retry-After is honoured up to the cap; beyond it the next target is used at once", async () => {
  const honoured = deps();
  const one = scripted({ a: [upstream(429, { "retry-after-ms": "250" })] });
  await route(
    alias("fallback", [target("a"), target("b")]),
    SETTINGS,
    honoured.deps,
    signal,
    [],
    one.attempt,
  );
  assert.deepEqual(one.calls, ["a", "a"]);
  assert.deepEqual(honoured.sleeps, [250]);

  const seconds = deps();
  const two = scripted({ a: [upstream(503, { "retry-after": "2" })] });
  await route(alias("fallback", [target("a"), target("b")]), SETTINGS, seconds.deps, signal, [], two.attempt);
  assert.deepEqual(seconds.sleeps, [2_000]);

  const tooLong = deps();
  const three = scripted({ a: [upstream(429, { "retry-after": "60" })] });
  const routed = await route(
    alias("fallback", [target("a"), target("b")]),
    SETTINGS,
    tooLong.deps,
    signal,
    [],
    three.attempt,
  );
  assert.equal(routed.value, "b answered");
  assert.deepEqual(three.calls, ["a", "b"]);
  assert.deepEqual(tooLong.sleeps, []);
});

Deno.test("route: backoff grows exponentially with jitter and stops at backoff_max", async () => {
  const { deps: d, sleeps } = deps(7);
  const failures = Array.from({ length: 6 }, () => upstream(500));
  const { attempt } = scripted({ a: failures });
  const patient = { ...SETTINGS, eject_after: 100 };
  await route(alias("fallback", [target("a", { retries: 6 })]), patient, d, signal, [], attempt);
  assert.equal(sleeps.length, 6);
  sleeps.forEach((ms, i) =>
    assert.ok(ms <= Math.min(SETTINGS.backoff_max, 100 * 2 ** i), `retry ${i}: ${ms}`)
  );
});

Deno.test("route: an upstream auth or billing failure moves to the next target without retrying the same one", async () => {
  // 402: Anthropic's `billing_error` (the operator's account), which another target's account may not have.
  for (const status of [401, 402]) {
    const { deps: d, sleeps } = deps();
    const { calls, attempt } = scripted({ a: [new GatewayError(status, "provider account refused")] });
    const routed = await route(
      alias("fallback", [target("a"), target("b")]),
      SETTINGS,
      d,
      signal,
      [],
      attempt,
    );
    assert.equal(routed.value, "b answered", String(status));
    assert.deepEqual(calls, ["a", "b"], String(status));
    assert.deepEqual(sleeps, []);
  }
});

Deno.test("route: when every attempt fails, the last failure is returned", async () => {
  const { deps: d } = deps();
  const { calls, attempt } = scripted({
    a: [upstream(500), upstream(500)],
    b: [upstream(502), upstream(504)],
  });
  await assert.rejects(
    route(alias("fallback", [target("a"), target("b")]), SETTINGS, d, signal, [], attempt),
    (err: unknown) => err instanceof GatewayError && err.code === "u504",
  );
  assert.deepEqual(calls, ["a", "a", "b", "b"]);
});

Deno.test("plan: weighted picks the first target in proportion to weight (seeded)", () => {
  const model = alias("weighted", [target("a", { weight: 3 }), target("b", { weight: 1 })]);
  const random = seededRandom(42);
  let first = 0;
  const n = 20_000;
  for (let i = 0; i < n; i++) if (orderTargets(model, random, () => null)[0].provider === "a") first++;
  assert.ok(Math.abs(first / n - 0.75) < 0.015, `share of a: ${first / n}`);
  // The rest always follows as fallback.
  assert.deepEqual(orderTargets(model, random, () => null).map((t) => t.provider).sort(), ["a", "b"]);
});

Deno.test("plan: latency strategy prefers the faster of two and explores targets without latency", () => {
  const model = alias("latency", [target("slow"), target("fast")]);
  const latency = (t: RoutedTarget) => (t.provider === "slow" ? 80 : 5);
  const random = seededRandom(3);
  for (let i = 0; i < 100; i++) assert.equal(orderTargets(model, random, latency)[0].provider, "fast");
  const unknown = (t: RoutedTarget) => (t.provider === "slow" ? null : 5);
  assert.equal(orderTargets(model, random, unknown)[0].provider, "slow", "a target with no data is tried");
  // With three targets, the two drawn are compared; the overall fastest wins whenever it is drawn.
  const three = alias("latency", [target("a"), target("b"), target("c")]);
  const lat = (t: RoutedTarget) => ({ a: 30, b: 10, c: 20 })[t.provider] ?? 0;
  let bFirst = 0;
  for (let i = 0; i < 3_000; i++) if (orderTargets(three, random, lat)[0].provider === "b") bFirst++;
  assert.ok(Math.abs(bFirst / 3_000 - 2 / 3) < 0.04, `b first ${bFirst / 3_000}`);
});

Deno.test("health: a target failing eject_after times is skipped for the cooldown, then probed once", async () => {
  const { deps: d, clock } = deps();
  const model = alias("fallback", [target("a", { retries: 0 }), target("b")]);
  const { calls, attempt } = scripted({ a: [upstream(500), upstream(500), upstream(500)] });
  for (let i = 0; i < 3; i++) await route(model, SETTINGS, d, signal, [], attempt);
  assert.deepEqual(calls, ["a", "b", "a", "b", "a", "b"]);
  assert.equal(d.health.snapshot().find((s) => s.provider === "a")?.state, "ejected");

  calls.length = 0;
  await route(model, SETTINGS, d, signal, [], attempt);
  clock.now += SETTINGS.eject_cooldown - 1;
  await route(model, SETTINGS, d, signal, [], attempt);
  assert.deepEqual(calls, ["b", "b"], "skipped during the cooldown");

  clock.now += 1;
  assert.equal(d.health.snapshot().find((s) => s.provider === "a")?.state, "half_open");
  // The probe is in flight: a concurrent request does not pile onto the recovering target.
  let releaseProbe!: () => void;
  const probeGate = new Promise<void>((r) => releaseProbe = r);
  calls.length = 0;
  const probing = route(model, SETTINGS, d, signal, [], async (t) => {
    calls.push(t.provider);
    if (t.provider === "a") await probeGate;
    return "ok";
  });
  await Promise.resolve();
  assert.equal(d.health.snapshot().find((s) => s.provider === "a")?.state, "probing");
  await route(model, SETTINGS, d, signal, [], attempt);
  releaseProbe();
  const probed = await probing;
  probed.lease.release();
  assert.deepEqual(calls, ["a", "b"]);
  assert.equal(d.health.snapshot().find((s) => s.provider === "a")?.state, "healthy");
});

Deno.test("route: an attempt that calls no upstream ends routing unrecorded, its target's health untouched", async () => {
  const { deps: d, clock } = deps();
  const model = alias("fallback", [target("a", { retries: 0 }), target("b")]);
  const { attempt } = scripted({ a: [upstream(500), upstream(500), upstream(500)] });
  for (let i = 0; i < 3; i++) await route(model, SETTINGS, d, signal, [], attempt);
  clock.now += SETTINGS.eject_cooldown;
  const halfOpen = d.health.snapshot().find((s) => s.provider === "a");
  assert.equal(halfOpen?.state, "half_open");

  const attempts: AttemptRecord[] = [];
  const calls: string[] = [];
  await assert.rejects(
    route(model, SETTINGS, d, signal, attempts, (t) => {
      calls.push(t.provider);
      throw new NoUpstreamCall();
    }),
    NoUpstreamCall,
  );
  assert.deepEqual(calls, ["a"], "routing ends at the target it picked");
  assert.deepEqual(attempts, [], "no attempt is recorded");
  // Not the probe: still half-open, streak and latency as they were, its slot given back.
  assert.deepEqual(d.health.snapshot().find((s) => s.provider === "a"), halfOpen);
});

Deno.test("health: a failed probe ejects again for a full cooldown", async () => {
  const { deps: d, clock } = deps();
  const model = alias("fallback", [target("a", { retries: 0 }), target("b")]);
  const { calls, attempt } = scripted({ a: [upstream(500), upstream(500), upstream(500), upstream(500)] });
  for (let i = 0; i < 3; i++) await route(model, SETTINGS, d, signal, [], attempt);
  clock.now += SETTINGS.eject_cooldown;
  calls.length = 0;
  await route(model, SETTINGS, d, signal, [], attempt);
  assert.deepEqual(calls, ["a", "b"], "probe failed, request fell back");
  calls.length = 0;
  clock.now += SETTINGS.eject_cooldown - 1;
  await route(model, SETTINGS, d, signal, [], attempt);
  assert.deepEqual(calls, ["b"]);
});

Deno.test("health: each ejection is told once (alerts), a failed probe again, a failure while ejected not", async () => {
  const { deps: d, clock } = deps();
  const told: { target: string; until: string; failures: number }[] = [];
  d.health.onEjected = (e) => told.push(e);
  const model = alias("fallback", [target("a", { retries: 0 }), target("b")]);
  const { attempt } = scripted({ a: [upstream(500), upstream(500), upstream(500), upstream(500)] });
  for (let i = 0; i < 3; i++) await route(model, SETTINGS, d, signal, [], attempt);
  assert.equal(told.length, 1, "ejected once");
  assert.equal(told[0].target, "a/a-model");
  assert.equal(told[0].until, new Date(clock.now + SETTINGS.eject_cooldown).toISOString());
  await route(model, SETTINGS, d, signal, [], attempt);
  assert.equal(told.length, 1, "a request while ejected goes elsewhere and tells nothing");
  clock.now += SETTINGS.eject_cooldown;
  await route(model, SETTINGS, d, signal, [], attempt);
  assert.equal(told.length, 2, "the failed probe ejects again, and says so");
});

Deno.test("route: saturated and ejected targets give a quick 503 with Retry-After", async () => {
  const { deps: d, clock, sleeps } = deps();
  const model = alias("fallback", [target("a", { maxInFlight: 1 }), target("b", { maxInFlight: 1 })]);
  const held = await route(model, SETTINGS, d, signal, [], () => Promise.resolve("held a"));
  const second = await route(model, SETTINGS, d, signal, [], () => Promise.resolve("went to b"));
  assert.equal(second.target.provider, "b", "a is at its in-flight limit");
  await assert.rejects(
    route(model, SETTINGS, d, signal, [], () => Promise.resolve("never")),
    (err: unknown) => {
      assert.ok(err instanceof GatewayError);
      assert.equal(err.status, 503);
      assert.equal(err.code, "no_target_available");
      assert.equal(new Headers(err.headers).get("retry-after"), "1");
      return true;
    },
  );
  assert.deepEqual(sleeps, [], "quick: no backoff waited out before the 503");
  held.lease.release();
  second.lease.release();

  const only = alias("fallback", [target("c", { retries: 0 })]);
  const { attempt } = scripted({ c: [upstream(500), upstream(500), upstream(500)] });
  for (let i = 0; i < 3; i++) await route(only, SETTINGS, d, signal, [], attempt).catch(() => {});
  clock.now += 10_000;
  await assert.rejects(route(only, SETTINGS, d, signal, [], attempt), (err: unknown) => {
    assert.ok(err instanceof GatewayError && err.status === 503);
    assert.equal(new Headers(err.headers).get("retry-after"), "20", "seconds until the cooldown ends");
    return true;
  });
});

Deno.test("route: a client abort during backoff stops routing", async () => {
  const { deps: d } = deps();
  const controller = new AbortController();
  const attempt = () => {
    controller.abort();
    return Promise.reject(upstream(500));
  };
  await assert.rejects(
    route(alias("fallback", [target("a"), target("b")]), SETTINGS, d, controller.signal, [], attempt),
    (err: unknown) => err instanceof GatewayError && err.code === "u500",
  );
});

// A 401 is the gateway's own key at that target, wrong for every client alike: unlike a 403 or 404 it must
// count towards ejection, or every request pays a dead target's round trip before failing over.
Deno.test("route: an upstream 401 counts towards ejection; the next request goes straight to the fallback", async () => {
  const { deps: d } = deps();
  const model = alias("fallback", [target("a"), target("b")]);
  const { calls, attempt } = scripted({ a: [new GatewayError(401, "provider key rejected")] });
  await route(model, { ...SETTINGS, eject_after: 1 }, d, signal, [], attempt);
  assert.deepEqual(calls, ["a", "b"]);
  assert.equal(d.health.snapshot().find((s) => s.provider === "a")?.state, "ejected");
  calls.length = 0;
  const routed = await route(model, { ...SETTINGS, eject_after: 1 }, d, signal, [], attempt);
  assert.equal(routed.value, "b answered");
  assert.deepEqual(calls, ["b"], "the ejected target is not tried");
});

// Once the client is gone nobody reads the answer: a retry or a fallback would spend upstream calls (and money)
// on it, and charge failures to targets' health.
Deno.test("route: a client abort during an attempt ends routing there: no retry, no fallback, one attempt logged", async () => {
  const { deps: d, sleeps } = deps();
  const controller = new AbortController();
  const calls: string[] = [];
  const attempts: AttemptRecord[] = [];
  const attempt = (t: RoutedTarget) => {
    calls.push(t.provider);
    controller.abort();
    return Promise.reject(upstream(500));
  };
  await assert.rejects(
    route(alias("fallback", [target("a"), target("b")]), SETTINGS, d, controller.signal, attempts, attempt),
    (err: unknown) => err instanceof GatewayError && err.code === "u500",
  );
  assert.deepEqual(calls, ["a"]);
  assert.deepEqual(attempts.map((a) => a.outcome), ["u500"]);
  assert.deepEqual(sleeps, []);
  assert.equal(d.health.snapshot().find((s) => s.provider === "a")?.consecutive_failures, 0, "not charged");
});
