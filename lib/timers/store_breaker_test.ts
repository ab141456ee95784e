import assert from "node:assert/strict";
import { createStoreBreaker, STORE_PROBE_INTERVAL_MS, StoreNotTried, wasNotTried } from "./store_breaker.ts";

Deno.test("store breaker: up tries every call; down tries one per interval; a success brings it back", () => {
  let t = 0;
  const breaker = createStoreBreaker({ now: () => t });
  assert.equal(breaker.up, true);
  assert.deepEqual([breaker.tryNow(), breaker.tryNow()], [true, true]);
  assert.equal(breaker.failed(), true, "the failure that takes it down says so");
  assert.equal(breaker.failed(), false, "later ones do not");
  assert.equal(breaker.up, false);
  assert.equal(breaker.tryNow(), false);
  t += STORE_PROBE_INTERVAL_MS - 1;
  assert.equal(breaker.tryNow(), false);
  t += 1;
  assert.equal(breaker.tryNow(), true, "the probe");
  assert.equal(breaker.tryNow(), false, "one per interval");
  t += STORE_PROBE_INTERVAL_MS;
  assert.equal(breaker.tryNow(), true);
  assert.equal(breaker.succeeded(), true, "the success that brings it back says so");
  assert.equal(breaker.succeeded(), false);
  assert.equal(breaker.tryNow(), true);
});

Deno.test("store breaker: a failure while down puts the next probe an interval after it", () => {
  let t = 0;
  const breaker = createStoreBreaker({ now: () => t, probeIntervalMs: 100 });
  breaker.failed();
  t = 100;
  assert.equal(breaker.tryNow(), true);
  t = 150;
  breaker.failed(); // the probe failed late (it waited for the store's timeout)
  t = 200;
  assert.equal(breaker.tryNow(), false);
  t = 250;
  assert.equal(breaker.tryNow(), true);
});

Deno.test("store breaker: an answer given without trying the store is told apart, also as another error's cause", () => {
  const notTried = new StoreNotTried("PostgreSQL response put");
  assert.equal(wasNotTried(notTried), true);
  assert.equal(wasNotTried(new Error("the 503", { cause: notTried })), true);
  // A call that tried the store and failed is news to log.
  assert.equal(wasNotTried(new Error("the 503", { cause: new Error("timeout") })), false);
  assert.equal(wasNotTried("not an error"), false);
});
