/**
 * The webhook sender against a real local receiver: the body and headers (a signature the receiver
 * verifies), retries after 5xx and 429 but not after other 4xx, an attempt's timeout against a receiver that
 * hangs (while `enqueue` returns at once), the queue's bound, and `close` sending what it holds (retries at
 * once) until its deadline, then reporting each job it could not send.
 */
import assert from "node:assert/strict";
import { type AlertBody, createDelivery, type DeliveryTarget, type DeliveryTimers } from "./delivery.ts";

interface Received {
  readonly headers: Headers;
  readonly body: string;
}

/** A receiver on a free port; `handler` answers each post, `received` keeps them. */
function receiver(handler: (n: number) => Response | Promise<Response>) {
  const received: Received[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    received.push({ headers: req.headers, body: await req.text() });
    return await handler(received.length);
  });
  return { url: `http://127.0.0.1:${server.addr.port}/hook?k=v`, received, close: () => server.shutdown() };
}

/** Polls `cond` until it holds or 5 s pass. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function target(url: string, extra: Partial<DeliveryTarget> = {}): DeliveryTarget {
  return { url, timeout: 2_000, retries: 3, ...extra };
}

function alert(id = `alr_${crypto.randomUUID().replaceAll("-", "")}`): AlertBody {
  return { id, type: "budget", time: new Date(0).toISOString(), threshold: 80 };
}

async function verifies(secret: string, body: string, header: string | null): Promise<boolean> {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    enc.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [
      "verify",
    ],
  );
  const hex = /^sha256=([0-9a-f]{64})$/.exec(header ?? "")?.[1];
  if (!hex) return false;
  const mac = new Uint8Array(hex.match(/../g)!.map((h) => parseInt(h, 16)));
  return await crypto.subtle.verify("HMAC", key, mac, enc.encode(body));
}

Deno.test("delivery: posts the JSON body with its headers and a signature the receiver verifies", async () => {
  const r = receiver(() => new Response("ok"));
  const errors: Error[] = [];
  const d = createDelivery({ onError: (e) => errors.push(e) });
  try {
    const a = alert();
    const state = d.enqueue(
      target(r.url, { secret: "hush-123", headers: { "x-team": "ops", "x-gateway-alert-id": "spoof" } }),
      a,
    );
    await until(() => state.status === "delivered", "delivery");
    assert.equal(r.received.length, 1);
    const { headers, body } = r.received[0];
    assert.deepEqual(JSON.parse(body), a);
    assert.equal(headers.get("content-type"), "application/json");
    assert.equal(headers.get("x-team"), "ops");
    assert.equal(headers.get("x-gateway-alert-id"), a.id);
    assert.equal(await verifies("hush-123", body, headers.get("x-gateway-signature")), true);
    assert.equal(body.includes("hush-123"), false);
    assert.equal(state.attempts, 1);
    assert.deepEqual(errors, []);
  } finally {
    await d.close();
    await r.close();
  }
});

Deno.test("delivery: no signature header without a secret", async () => {
  const r = receiver(() => new Response(null, { status: 204 }));
  const d = createDelivery();
  try {
    const state = d.enqueue(target(r.url), alert());
    await until(() => state.status === "delivered", "delivery");
    assert.equal(r.received[0].headers.has("x-gateway-signature"), false);
  } finally {
    await d.close();
    await r.close();
  }
});

Deno.test("delivery: 500 twice then 200 is delivered on the third attempt, same alert id each time", async () => {
  const r = receiver((n) => new Response(null, { status: n <= 2 ? 500 : 200 }));
  const d = createDelivery({ backoffMs: 5 });
  try {
    const a = alert();
    const state = d.enqueue(target(r.url), a);
    await until(() => state.status === "delivered", "delivery");
    assert.equal(state.attempts, 3);
    assert.deepEqual(r.received.map((x) => x.headers.get("x-gateway-alert-id")), [a.id, a.id, a.id]);
  } finally {
    await d.close();
    await r.close();
  }
});

Deno.test("delivery: 429 is retried, another 4xx is final, and retries stop at the target's count", async () => {
  const r = receiver((n) => new Response(null, { status: n === 1 ? 429 : 400 }));
  const always500 = receiver(() => new Response(null, { status: 503 }));
  const errors: Error[] = [];
  const d = createDelivery({ backoffMs: 5, onError: (e) => errors.push(e) });
  try {
    const s400 = d.enqueue(target(r.url), alert());
    const s503 = d.enqueue(target(always500.url, { retries: 2 }), alert());
    await until(() => s400.status === "failed" && s503.status === "failed", "both to fail");
    assert.deepEqual([s400.attempts, s400.error], [2, "HTTP 400"]);
    assert.deepEqual([s503.attempts, s503.error], [3, "HTTP 503"]);
    assert.equal(always500.received.length, 3);
    assert.equal(errors.length, 2);
    for (const e of errors) assert.equal(e.message.includes("/hook"), false, "messages name the host only");
  } finally {
    await d.close();
    await r.close();
    await always500.close();
  }
});

Deno.test("delivery: enqueue never waits for a receiver that hangs; each attempt times out, then it fails", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  const r = receiver(async () => {
    await released;
    return new Response("late");
  });
  const d = createDelivery({ backoffMs: 5 });
  try {
    const started = performance.now();
    const state = d.enqueue(target(r.url, { timeout: 100, retries: 2 }), alert());
    assert.ok(performance.now() - started < 50, "enqueue returned at once");
    assert.equal(state.status, "pending");
    await until(() => state.status === "failed", "the attempts to time out");
    assert.deepEqual([state.attempts, state.error], [3, "timeout"]);
  } finally {
    release();
    await d.close();
    await r.close();
  }
});

Deno.test("delivery: past the queue's bound the oldest waiting job is dropped and counted", async () => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const sent: string[] = [];
  const fakeFetch: typeof fetch = async (_url, init) => {
    sent.push(JSON.parse(String(init?.body)).id);
    await gate;
    return new Response(null, { status: 200 });
  };
  const errors: Error[] = [];
  const d = createDelivery({ fetch: fakeFetch, maxQueue: 3, concurrency: 1, onError: (e) => errors.push(e) });
  try {
    const states = ["a", "b", "c", "d", "e", "f"].map((id) =>
      d.enqueue(target("http://127.0.0.1:9/x"), alert(id))
    );
    // "a" is in flight; "b".."f" competed for three places: the two oldest went.
    assert.deepEqual(states.map((s) => s.status), [
      "pending",
      "dropped",
      "dropped",
      "pending",
      "pending",
      "pending",
    ]);
    assert.equal(d.dropped, 2);
    assert.equal(d.pending, 3);
    assert.equal(errors.length, 2);
    release();
    await until(
      () => states.filter((s) => s.status === "delivered").length === 4,
      "the rest to be delivered",
    );
    assert.deepEqual(sent, ["a", "d", "e", "f"]);
  } finally {
    release();
    await d.close();
  }
});

/** Timers under the test's control: `advance(ms)` fires, in order, every timer due by then. */
function fakeTimers(): DeliveryTimers & { advance(ms: number): void; readonly armed: number } {
  let now = 0;
  let next = 0;
  const due = new Map<number, { at: number; fn: () => void }>();
  return {
    set(fn, ms) {
      due.set(++next, { at: now + ms, fn });
      return next;
    },
    clear(handle) {
      due.delete(handle as number);
    },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const [id, first] = [...due].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
        if (first === undefined || first.at > until) break;
        due.delete(id!);
        now = first.at;
        first.fn();
      }
      now = until;
    },
    get armed() {
      return due.size;
    },
  };
}

/** A `fetch` whose every call waits for the test to answer it (`answer(status)`, oldest first); aborts end it. */
function heldFetch() {
  const calls: { id: string; answer: (status: number) => void }[] = [];
  const fetch: typeof globalThis.fetch = (_url, init) =>
    new Promise<Response>((resolve, reject) => {
      const id = JSON.parse(String(init?.body)).id;
      calls.push({ id, answer: (status) => resolve(new Response(null, { status })) });
      init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
    });
  const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
  /** Answers the oldest unanswered call, then lets delivery go on. */
  let answered = 0;
  const answer = async (status: number) => {
    calls[answered++].answer(status);
    await flush();
  };
  return { calls, fetch, answer, flush };
}

Deno.test("delivery: close sends what is queued and the retries waiting for their backoff, then resolves", async () => {
  const timers = fakeTimers();
  const f = heldFetch();
  const errors: Error[] = [];
  const d = createDelivery({
    fetch: f.fetch,
    timers,
    concurrency: 1,
    backoffMs: 30_000,
    onError: (e) => errors.push(e),
  });
  const a = d.enqueue(target("http://127.0.0.1:9/x"), alert("a"));
  await f.flush();
  await f.answer(500); // "a" waits 30 s for its retry
  const b = d.enqueue(target("http://127.0.0.1:9/x"), alert("b"));
  const c = d.enqueue(target("http://127.0.0.1:9/x"), alert("c"));
  await f.flush();
  let closed = false;
  const closing = d.close().then(() => closed = true);
  assert.equal(d.enqueue(target("http://127.0.0.1:9/x"), alert("late")).status, "dropped");
  await f.answer(200); // "b"
  await f.answer(200); // "c", then "a" at once, without its backoff
  assert.equal(closed, false, "close waits for what it still holds");
  await f.answer(200); // "a"
  await closing;
  assert.deepEqual(f.calls.map((x) => x.id), ["a", "b", "c", "a"]);
  assert.deepEqual([a.status, b.status, c.status], ["delivered", "delivered", "delivered"]);
  assert.deepEqual(errors.map((e) => e.message), ["alert late to 127.0.0.1:9 dropped: delivery is closed"]);
});

Deno.test("delivery: at close's deadline what is in flight is aborted and every job not sent is reported", async () => {
  const timers = fakeTimers();
  const f = heldFetch();
  const errors: Error[] = [];
  const d = createDelivery({
    fetch: f.fetch,
    timers,
    concurrency: 1,
    closeTimeoutMs: 5_000,
    onError: (e) => errors.push(e),
  });
  const hung = d.enqueue(target("http://127.0.0.1:9/x", { timeout: 60_000 }), alert("hung"));
  const queued = d.enqueue(target("http://127.0.0.1:9/x"), alert("queued"));
  await f.flush();
  const closing = d.close();
  timers.advance(5_000);
  await closing;
  assert.deepEqual([hung.status, hung.error], ["failed", "closed"]);
  assert.deepEqual([queued.status, queued.error], ["dropped", "closed"]);
  assert.deepEqual(f.calls.map((x) => x.id), ["hung"]);
  assert.deepEqual(errors.map((e) => e.message).sort(), [
    "alert hung to 127.0.0.1:9 failed after 1 attempt(s): closed",
    "alert queued to 127.0.0.1:9 dropped: delivery closed before it was sent (0 attempt(s) made)",
  ]);
  assert.equal(timers.armed, 0, "no timer left behind");
});

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

/** A `fetch` under which every URL containing "hung" hangs (the test never lets a timeout come); others answer. */
function hangingFetch() {
  const hung: string[] = [];
  const fetch: typeof globalThis.fetch = (url, init) => {
    if (String(url).includes("hung")) {
      hung.push(JSON.parse(String(init?.body)).id);
      return new Promise<Response>(() => {});
    }
    return Promise.resolve(new Response(null, { status: 204 }));
  };
  return { hung, fetch };
}

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
