/**
 * The outage ledger's bounds: what it owes is taken in batches of the size asked, the longest owed first, and
 * it owes at most so many counters (more are dropped and counted, as are counters whose period expired).
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

Deno.test("outage ledger: a refund takes back what was owed or handed over to its counter, no more", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now, { maxOwed: 1 });
  const at = (key: string, amount: number) => ({ key, period: "p", amount, expiresAt: c.now() + HOUR });
  // Reserved 300, handed over; the request used 10: its refund of 290 is owed in full, after the hand-over.
  ledger.owe(at("a", 300));
  assert.deepEqual(ledger.take(10).map((d) => d.amount), [300]);
  ledger.owe(at("a", -290));
  assert.deepEqual(ledger.take(10).map((d) => d.amount), [-290]);
  // Of the 10 that stay added, a later refund takes 10 at most.
  ledger.owe(at("a", -50));
  assert.equal(ledger.owedTo("a", "p"), -10);
  ledger.take(10);
  // Reserved 500 while the ledger is full: dropped, so its later refund of 490 is owed nothing.
  ledger.owe(at("b", 7));
  assert.equal(ledger.owe(at("c", 500)), false);
  ledger.take(10);
  ledger.owe(at("c", -490));
  assert.equal(ledger.owedTo("c", "p"), 0);
  assert.deepEqual(ledger.take(10), []);
});

Deno.test("outage ledger: a hand-over that failed (maybe never applied) backs no refund", () => {
  const c = clock();
  const ledger = createOutageLedger(c.now);
  const at = (amount: number) => ({ key: "a", period: "p", amount, expiresAt: c.now() + HOUR });
  ledger.owe(at(300));
  const batch = ledger.take(10);
  // A refund settled while the hand-over is under way may take what is being handed over...
  ledger.owe(at(-290));
  assert.equal(ledger.owedTo("a", "p"), -290);
  // ...until that hand-over fails: the shared counter may never get the 300, so it owes no refund of them.
  ledger.failed(batch);
  assert.equal(ledger.owedTo("a", "p"), 0);
  ledger.owe(at(-5));
  assert.deepEqual(ledger.take(10), []);
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
