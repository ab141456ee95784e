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
  const ledger = createOutageLedger(c.now, 2);
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
