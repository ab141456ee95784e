import assert from "node:assert/strict";
import { makeRecord } from "../../tests/helpers/usage.ts";
import { observeInserts } from "./observed_store.ts";
import { createSqliteStore } from "./sqlite_store.ts";

Deno.test("observed store: each insert reports whether it stored; the rest is the store's", async () => {
  const db = createSqliteStore(":memory:");
  const results: boolean[] = [];
  const observed = observeInserts(db, (ok) => results.push(ok));
  await observed.insert([{ ...makeRecord(1), uid: "a" }]);
  assert.equal(observed.responses, db.responses);
  assert.equal((await observed.query({})).totals.requests, 1);
  await db.close();
  await assert.rejects(observed.insert([{ ...makeRecord(2), uid: "b" }]), /closed/);
  assert.deepEqual(results, [true, false]);
});
