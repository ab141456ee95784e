/**
 * The webhook sender's lanes: a receiver that hangs holds its own slots, never another receiver's alerts; a
 * receiver is an origin; receivers are served in turn; past the queue's bound the busiest receiver loses first.
 */
import assert from "node:assert/strict";
import { createDelivery } from "./delivery.ts";
import { alert, fakeTimers, hangingFetch, heldFetch, target } from "./delivery_test_helpers.ts";

Deno.test("delivery: a receiver that hangs holds two slots of its own, never another receiver's alerts", async () => {
  const timers = fakeTimers();
  const hung: string[] = [];
  const fetch: typeof globalThis.fetch = (url, init) => {
    const id = JSON.parse(String(init?.body)).id;
    if (String(url).includes("hung")) {
      hung.push(id);
      return new Promise<Response>(() => {}); // until its timeout, which the test never lets come
    }
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  const d = createDelivery({ fetch, timers });
  const slow = target("http://hung.example/hook", { timeout: 3_000 });
  const fast = target("http://fast.example/hook");
  const toFast = [];
  for (let i = 0; i < 8; i++) {
    d.enqueue(slow, alert(`slow-${i}`));
    toFast.push(d.enqueue(fast, alert(`fast-${i}`)));
  }
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(toFast.map((s) => s.status), Array(8).fill("delivered"));
  assert.deepEqual(hung, ["slow-0", "slow-1"], "the hung receiver has two attempts in flight");
  assert.equal(d.pending, 6, "its other six wait in its own queue");
});

Deno.test("delivery: two receivers that hang never hold back a third: the last slot is kept for it", async () => {
  const f = hangingFetch();
  const d = createDelivery({ fetch: f.fetch, timers: fakeTimers() });
  const hungA = target("http://hung-a.example/hook", { timeout: 300_000 });
  const hungB = target("http://hung-b.example/hook", { timeout: 300_000 });
  for (const id of ["a1", "a2"]) d.enqueue(hungA, alert(id));
  for (const id of ["b1", "b2"]) d.enqueue(hungB, alert(id));
  const healthy = d.enqueue(target("http://up.example/hook"), alert("up"));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(healthy.status, "delivered");
  // b2 did not take the fourth slot, b1 already being in flight: three slots for the two stuck receivers.
  assert.deepEqual(f.hung, ["a1", "a2", "b1"]);
});

Deno.test("delivery: webhooks on one server share its slots: a receiver is an origin, not a URL", async () => {
  const f = hangingFetch();
  const d = createDelivery({ fetch: f.fetch, timers: fakeTimers() });
  // Three webhooks of one hung server (as Slack's are paths on hooks.slack.com), two alerts each.
  for (const path of ["T1/B1", "T1/B2", "T2/B3"]) {
    const hook = target(`https://hung.example/services/${path}`, { timeout: 300_000 });
    d.enqueue(hook, alert(`${path}-1`));
    d.enqueue(hook, alert(`${path}-2`));
  }
  const healthy = d.enqueue(target("https://up.example/hook"), alert("up"));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(healthy.status, "delivered");
  assert.deepEqual(f.hung, ["T1/B1-1", "T1/B1-2"], "the server has its two slots, not two per webhook");
  assert.equal(d.pending, 4, "its other alerts wait in its one queue");
});

Deno.test("delivery: receivers are served in turn, and a retry goes behind its receiver's other alerts", async () => {
  const timers = fakeTimers();
  const f = heldFetch();
  const d = createDelivery({ fetch: f.fetch, timers, concurrency: 1, backoffMs: 1_000 });
  const a = target("http://a.example/hook");
  const b = target("http://b.example/hook");
  for (const id of ["a1", "a2", "a3"]) d.enqueue(a, alert(id));
  d.enqueue(b, alert("b1"));
  await f.flush();
  await f.answer(500); // a1 waits for its retry; b1 goes next, then a2
  await f.answer(200); // b1
  timers.advance(1_000); // a1 is due again: behind a3
  await f.answer(200); // a2
  await f.answer(200); // a3
  await f.answer(200); // a1
  assert.deepEqual(f.calls.map((c) => c.id), ["a1", "b1", "a2", "a3", "a1"]);
  assert.equal(d.pending, 0);
});

Deno.test("delivery: past the bound, the receiver holding the most loses its oldest, not a quiet receiver", async () => {
  const timers = fakeTimers();
  const f = heldFetch();
  const errors: Error[] = [];
  const d = createDelivery({ fetch: f.fetch, timers, maxQueue: 4, onError: (e) => errors.push(e) });
  const down = target("http://down.example/hook");
  const up = target("http://up.example/hook");
  const toDown = ["d1", "d2", "d3", "d4", "d5", "d6"].map((id) => d.enqueue(down, alert(id)));
  const toUp = d.enqueue(up, alert("u1"));
  await f.flush();
  // d1 and d2 are in flight (two per receiver), u1 too; d3..d6 and nothing else held: u1 took no place.
  assert.equal(toUp.status, "pending");
  const more = d.enqueue(down, alert("d7"));
  assert.deepEqual(toDown.map((s) => s.status), [
    "pending",
    "pending",
    "dropped",
    "pending",
    "pending",
    "pending",
  ]);
  assert.equal(more.status, "pending");
  assert.deepEqual(errors.map((e) => e.message), ["alert d3 to down.example dropped: queue full"]);
});

Deno.test("delivery: past the bound, between receivers holding as many, the oldest alert goes", async () => {
  const timers = fakeTimers();
  const f = heldFetch();
  const d = createDelivery({ fetch: f.fetch, timers, concurrency: 1, maxQueue: 2 });
  const first = d.enqueue(target("http://one.example/hook"), alert("one-1"));
  const older = d.enqueue(target("http://one.example/hook"), alert("one-2"));
  const held = d.enqueue(target("http://two.example/hook"), alert("two-1"));
  const newest = d.enqueue(target("http://three.example/hook"), alert("three-1"));
  await f.flush();
  // "one-1" is in flight; each receiver then holds one: the oldest of those, "one-2", made room.
  assert.deepEqual([first, older, held, newest].map((s) => s.status), [
    "pending",
    "dropped",
    "pending",
    "pending",
  ]);
});
