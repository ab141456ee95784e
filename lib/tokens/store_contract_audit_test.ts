/**
 * The token store contract for the audit trail (order, filters, paging), run alike against every store; see
 * store_contract_test_helpers.ts.
 */
import assert from "node:assert/strict";
import { AuditCursorError, type AuditEntry, type StoredToken } from "./types.ts";
import { contract, makeAudit, makeToken } from "./store_contract_test_helpers.ts";

contract("the audit trail: newest first, filtered, paged", async ({ store }) => {
  const alpha = makeToken({ name: "alpha" });
  const beta = makeToken({ name: "beta" });
  const base = Date.parse("2026-11-20T00:00:00.000Z");
  const at = (hours: number) => new Date(base + hours * 3_600_000).toISOString();
  const plan: [StoredToken, AuditEntry["action"], string, number][] = [
    [alpha, "create", "ops-admin", 0],
    [beta, "create", "ops-admin", 1],
    [alpha, "update", "sec-admin", 2],
    [alpha, "rotate", "ops-admin", 3],
    [beta, "update", "sec-admin", 4],
    [alpha, "revoke", "sec-admin", 5],
  ];
  const written: AuditEntry[] = [];
  for (const [token, action, actor, hours] of plan) {
    const entry = makeAudit(token, {
      action,
      actor,
      time: at(hours),
      changes: action === "rotate" ? { grace_ms: 60_000, previous_expires_at: at(hours) } : {},
    });
    written.push(entry);
    await store.put(action === "revoke" ? { ...token, revoked_at: at(hours) } : token, entry);
  }
  const ids = (page: { entries: readonly AuditEntry[] }) => page.entries.map((e) => e.id);
  const newest = [...written].reverse();

  const all = await store.audit({ limit: 100 });
  assert.deepEqual(all.entries, newest, "every field back, newest first");
  assert.equal(all.has_more, false);

  assert.deepEqual(
    ids(await store.audit({ limit: 100, token: alpha.id })),
    ids({
      entries: newest.filter((e) => e.token_id === alpha.id),
    }),
  );
  assert.deepEqual(ids(await store.audit({ limit: 100, token: "beta" })), [written[4].id, written[1].id]);
  assert.deepEqual(ids(await store.audit({ limit: 100, actor: "sec-admin" })), [
    written[5].id,
    written[4].id,
    written[2].id,
  ]);
  assert.deepEqual(ids(await store.audit({ limit: 100, action: "update" })), [written[4].id, written[2].id]);
  // `from` inclusive, `to` exclusive; an offset is read as the instant it names.
  assert.deepEqual(ids(await store.audit({ limit: 100, from: at(2), to: "2026-11-20T06:00:00+02:00" })), [
    written[3].id,
    written[2].id,
  ]);
  assert.deepEqual(
    ids(await store.audit({ limit: 100, token: "alpha", action: "update", actor: "nobody" })),
    [],
  );

  // Paging: two at a time through everything, then by `after` with a filter on.
  const pages: string[] = [];
  let after: string | undefined;
  for (let n = 0; n < 5; n++) {
    const page = await store.audit({ limit: 2, after });
    pages.push(...ids(page));
    if (!page.has_more) break;
    after = page.entries[page.entries.length - 1].id;
  }
  assert.deepEqual(pages, ids({ entries: newest }));
  const exact = await store.audit({ limit: 6 });
  assert.equal(exact.has_more, false, "has_more is false when the page holds exactly the rest");
  const short = await store.audit({ limit: 5 });
  assert.equal(short.has_more, true);
  const filtered = await store.audit({ limit: 1, token: "alpha", after: written[3].id });
  assert.deepEqual(ids(filtered), [written[2].id]);
  assert.equal(filtered.has_more, true);
  // A cursor naming no entry is refused, never an empty last page a paging script would take for the end.
  await assert.rejects(store.audit({ limit: 5, after: "aud_" + "f".repeat(24) }), AuditCursorError);
  await assert.rejects(
    store.audit({ limit: 5, after: "aud_" + "f".repeat(24), token: "alpha" }),
    AuditCursorError,
  );
});

contract("equal times page by the order the entries were written", async ({ store }) => {
  const time = "2026-11-24T09:00:00.000Z";
  const written: AuditEntry[] = [];
  for (let i = 0; i < 4; i++) {
    const token = makeToken({ name: `same-${i}` });
    const entry = makeAudit(token, { time });
    written.push(entry);
    await store.put(token, entry);
  }
  const first = await store.audit({ limit: 2 });
  const second = await store.audit({ limit: 2, after: first.entries[1].id });
  assert.deepEqual(
    [...first.entries, ...second.entries].map((e) => e.id),
    written.map((e) => e.id).reverse(),
  );
  assert.equal(second.has_more, false);
});

contract(
  "an audit filter that is not an ISO time is refused, and the store keeps working",
  async ({ store }) => {
    await assert.rejects(store.audit({ limit: 10, from: "yesterday" }), /from is not an ISO time/);
    await assert.rejects(store.audit({ limit: 10, to: "soon" }), /to is not an ISO time/);
    const token = makeToken({ name: "after-a-bad-filter" });
    await store.put(token, makeAudit(token));
    assert.equal((await store.audit({ limit: 10 })).entries.length, 1);
  },
);
