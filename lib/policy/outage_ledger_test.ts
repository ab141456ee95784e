/**
 * The outage ledger's bounds: what it owes is taken in batches of the size asked, the longest owed first, and
 * it owes at most so many counters (more are dropped and counted, as are counters whose period expired). A
 * refund takes back only what its own reservation got onto the shared counter or still owes it, wherever its
 * hand-over went (owed, under way, answered, failed, not sent), and memory for reservations is bounded.
 */
import assert from "node:assert/strict";
import { clock } from "./engine_test_helpers.ts";
import { createOutageLedger } from "./outage_ledger.ts";

const HOUR = 3_600_000;

Deno.test("outage ledger: taken in batches, the longest owed first; what is not taken stays owed", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now);
  for (const key of ["a", "b", "c"]) ledger.owe({ key, period: "p", amount: 5, expiresAt: c.now() + HOUR });
  ledger.owe({ key: "a", period: "p", amount: 2, expiresAt: c.now() + HOUR });
  assert.deepEqual(ledger.take(2).map((d) => [d.key, d.amount]), [["a", 7], ["b", 5]]);
  assert.equal(ledger.owedTo("a", "p"), 0);
  assert.equal(ledger.owedTo("c", "p"), 5);
  assert.deepEqual(ledger.take(2).map((d) => d.key), ["c"]);
  assert.deepEqual(ledger.take(2), []);
});

Deno.test("outage ledger: at most so many counters owed; the rest and expired periods are dropped, counted", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now, { maxOwed: 2 });
  assert.equal(ledger.owe({ key: "a", period: "p", amount: 1, expiresAt: c.now() + 1_000 }), true);
  assert.equal(ledger.owe({ key: "b", period: "p", amount: 1, expiresAt: c.now() + HOUR }), true);
  assert.equal(ledger.owe({ key: "c", period: "p", amount: 1, expiresAt: c.now() + HOUR }), false);
  assert.equal(
    ledger.owe({ key: "b", period: "p", amount: 1, expiresAt: c.now() + HOUR }),
    true,
    "owed already",
  );
  assert.equal(ledger.dropped(), 1);
  assert.equal(ledger.dropped(), 0, "counted since last asked");
  // Once a's period has expired, its place is free for another counter.
  c.advance(1_000);
  assert.equal(ledger.owe({ key: "c", period: "p", amount: 1, expiresAt: c.now() + HOUR }), true);
  assert.equal(ledger.dropped(), 1);
  assert.deepEqual(ledger.take(10).map((d) => [d.key, d.amount]), [["b", 2], ["c", 1]]);
});

Deno.test("outage ledger: a refund takes back what its reservation still owes or got onto the shared counter", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now);
  const at = (amount: number) => ({ key: "a", period: "p", amount, expiresAt: c.now() + HOUR });
  // Still owed: a refund lowers what is owed, no further than the reservation.
  ledger.reserve("r1", [at(100)]);
  ledger.settle("r1", [at(-90)]);
  assert.equal(ledger.owedTo("a", "p"), 10);
  ledger.reserve("r2", [at(100)]);
  ledger.settle("r2", [at(-150)]);
  assert.equal(ledger.owedTo("a", "p"), 10);
  assert.deepEqual(ledger.take(10).map((d) => d.amount), [10]);
  // Handed over: the refund of 290 is owed in full, after the hand-over.
  ledger.reserve("r3", [at(300)]);
  ledger.handedOver(ledger.take(10));
  ledger.settle("r3", [at(-290)]);
  assert.equal(ledger.owedTo("a", "p"), -290);
  // Settled once: the same name refunds nothing more, nor does a refund naming no reservation.
  ledger.settle("r3", [at(-10)]);
  assert.equal(ledger.owe(at(-10)), true);
  assert.equal(ledger.owedTo("a", "p"), -290);
});

Deno.test("outage ledger: the refund of a reservation whose hand-over failed takes back no other spend", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now);
  const at = (amount: number) => ({ key: "a", period: "p", amount, expiresAt: c.now() + HOUR });
  // An earlier outage's 50, handed over.
  ledger.reserve("earlier", [at(50)]);
  ledger.settle("earlier", []);
  ledger.handedOver(ledger.take(10));
  // 100 reserved, in a hand-over that failed (maybe never added); then another request's 50 owed.
  ledger.reserve("r", [at(100)]);
  ledger.failed(ledger.take(10));
  ledger.owe(at(50));
  // Its refund takes neither the other request's 50 nor the earlier hand-over's.
  ledger.settle("r", [at(-90)]);
  assert.equal(ledger.owedTo("a", "p"), 50);
  assert.deepEqual(ledger.take(10).map((d) => d.amount), [50]);
});

Deno.test("outage ledger: a refund settled while its reservation is handed over waits for the answer", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now);
  const at = (amount: number) => ({ key: "a", period: "p", amount, expiresAt: c.now() + HOUR });
  ledger.reserve("r1", [at(300)]);
  const answered = ledger.take(10);
  ledger.settle("r1", [at(-290)]);
  assert.equal(ledger.owedTo("a", "p"), 0);
  ledger.handedOver(answered);
  assert.equal(ledger.owedTo("a", "p"), -290, "added: its refund is owed");
  ledger.take(10);
  ledger.reserve("r2", [at(300)]);
  const failed = ledger.take(10);
  ledger.settle("r2", [at(-290)]);
  ledger.failed(failed);
  assert.equal(ledger.owedTo("a", "p"), 0, "maybe never added: nothing to give back");
  assert.deepEqual(ledger.take(10), []);
});

Deno.test("outage ledger: a hand-over not sent is owed again, and its reservations' refunds follow it", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now);
  const at = (amount: number) => ({ key: "a", period: "p", amount, expiresAt: c.now() + HOUR });
  ledger.reserve("r", [at(100)]);
  const unsent = ledger.take(10);
  ledger.owe(at(20)); // owed since
  ledger.unsent(unsent);
  assert.equal(ledger.owedTo("a", "p"), 120);
  ledger.settle("r", [at(-90)]);
  assert.deepEqual(ledger.take(10).map((d) => d.amount), [30]);
});

Deno.test("outage ledger: a reservation not owed, or forgotten beyond the last remembered, takes nothing back", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now, { maxOwed: 1, maxReservations: 2 });
  const at = (key: string, amount: number) => ({ key, period: "p", amount, expiresAt: c.now() + HOUR });
  assert.equal(ledger.reserve("r1", [at("a", 100)]), true);
  // The ledger owes one counter: b's reservation is dropped, and names nothing to remember.
  assert.equal(ledger.reserve("full", [at("b", 500)]), false);
  ledger.settle("full", [at("b", -490)]);
  assert.equal(ledger.owedTo("b", "p"), 0);
  // Two remembered: a third forgets the oldest, whose refund then leaves what it reserved owed.
  ledger.reserve("r2", [at("a", 100)]);
  ledger.reserve("r3", [at("a", 100)]);
  ledger.settle("r1", [at("a", -90)]);
  ledger.settle("r2", [at("a", -90)]);
  assert.equal(ledger.owedTo("a", "p"), 300 - 90);
});

Deno.test("outage ledger: full, it walks its counters only once one's period may have ended", () => {
  const c = clock();
  let visited = 0;
  const ledger = createOutageLedger(c.now, { maxOwed: 1_000, onSweep: (n) => visited += n });
  const at = (key: string, expiresIn: number) => ({
    key,
    period: "p",
    amount: 1,
    expiresAt: c.now() + expiresIn,
  });
  for (let i = 0; i < 500; i++) ledger.owe(at(`hour${i}`, HOUR));
  for (let i = 0; i < 500; i++) ledger.owe(at(`day${i}`, 24 * HOUR));
  // Full, and no period has ended: a new counter is dropped without walking the owed ones (a request's work).
  for (let i = 0; i < 1_000; i++) assert.equal(ledger.owe(at(`late${i}`, 24 * HOUR)), false);
  assert.equal(visited, 0);
  // An hour later one walk frees the places of the 500 counters whose period ended; no other walk follows.
  c.advance(HOUR);
  const owed = Array.from({ length: 1_000 }, (_, i) => ledger.owe(at(`next${i}`, 24 * HOUR)));
  assert.deepEqual([owed.filter(Boolean).length, visited], [500, 1_000]);
  assert.equal(ledger.dropped(), 1_000 + 500 + 500, "the late ones, the expired ones, the next ones over");
});
