/**
 * The webhook sender against a real local receiver: the body and headers (a signature the receiver
 * verifies), retries after 5xx and 429 but not after other 4xx, an attempt's timeout against a receiver that
 * hangs (while `enqueue` returns at once), the queue's bound, and `close` sending what it holds (retries at
 * once) until its deadline, then reporting each job it could not send.
 */
import assert from "node:assert/strict";
import { createDelivery } from "./delivery.ts";
import { alert, fakeTimers, heldFetch, target } from "./delivery_test_helpers.ts";

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

/** Polls `cond` until it holds or 30 s pass (a bound on a failure, not a timing claim). */
async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
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
    // The receiver answers only once `release()` runs, in `finally`: reaching the next line is enqueue returning
    // without its answer, whatever a clock would say, and the alert is still on its way.
    const state = d.enqueue(target(r.url, { timeout: 100, retries: 2 }), alert());
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
