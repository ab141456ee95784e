/**
 * The token store contract, run alike against every store: memory; SQLite through the usage database's
 * worker, in a temp dir; PostgreSQL in a schema of its own, dropped after. The SQL stores run in CI always;
 * off CI (`CI` unset) they skip only when their service cannot be reached. The stores and `contract` are in
 * store_contract_test_helpers.ts; the audit trail's part of the contract is in store_contract_audit_test.ts,
 * and what PostgreSQL's `watch` hears in store_postgres_watch_test.ts.
 */
import assert from "node:assert/strict";
import { TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import postgres from "postgres";
import { isConnectionFailure } from "../usage/postgres_schema.ts";
import { type StoredToken, TokenChangedError, TokenNameTakenError } from "./types.ts";
import { contract, makeAudit, makeToken, MAY_SKIP } from "./store_contract_test_helpers.ts";

contract(
  "put then loadAll gives back every field, and callers cannot change stored rows",
  async ({ store }) => {
    const token = makeToken({
      secrets: [
        { sha256: "b".repeat(64), expires_at: null },
        { sha256: "c".repeat(64), expires_at: "2099-06-01T00:00:00.000Z" },
      ],
    });
    const bare = makeToken({
      name: "bare",
      description: null,
      endpoints: null,
      limits: null,
      budget: null,
      max_tokens: null,
      cache: false,
      team: null,
      team_id: null,
      end_user_limits: null,
      guardrails: null,
      expires_at: null,
      disabled: true,
      revoked_at: "2026-11-24T10:00:00.000Z",
      rotated_at: "2026-11-24T09:30:00.000Z",
    });
    const put = structuredClone(token);
    await store.put(put, makeAudit(token));
    await store.put(bare, makeAudit(bare));
    (put.models as string[]).push("changed-after-put");
    const loaded = await store.loadAll();
    assert.equal(loaded.tokens.length, 2);
    assert.deepEqual(loaded.tokens.find((t) => t.id === token.id), token);
    assert.deepEqual(loaded.tokens.find((t) => t.id === bare.id), bare);
    assert.equal(loaded.version, await store.version());
    (loaded.tokens.find((t) => t.id === token.id)!.models as string[]).push("changed-after-load");
    assert.deepEqual((await store.loadAll()).tokens.find((t) => t.id === token.id)?.models, token.models);
  },
);

contract(
  "a token's cache comes back as put: false, an object, or null, each kept apart",
  async ({ store }) => {
    const off = makeToken({ name: "off", cache: false });
    const none = makeToken({ name: "none", cache: null });
    const aged = makeToken({ name: "aged", cache: { no_store: false, no_cache: false, max_age: 600_000 } });
    for (const token of [off, none, aged]) await store.put(token, makeAudit(token));
    const cacheOf = async (id: string) => (await store.loadAll()).tokens.find((t) => t.id === id)?.cache;
    assert.equal(await cacheOf(off.id), false);
    assert.equal(await cacheOf(none.id), null);
    assert.deepEqual(await cacheOf(aged.id), aged.cache);
    // Replaced both ways: the object cleared to null, and false made an object.
    await store.put({ ...aged, cache: null, updated_at: "2026-11-24T11:00:00.000Z" }, makeAudit(aged));
    await store.put({ ...off, cache: { no_store: true, no_cache: false } }, makeAudit(off));
    assert.equal(await cacheOf(aged.id), null);
    assert.deepEqual(await cacheOf(off.id), { no_store: true, no_cache: false });
  },
);

contract(
  "a token's team and end-user limits come back as put, are replaced and cleared; absent reads as null",
  async ({ store }) => {
    const member = makeToken({ name: "member" });
    const loose = makeToken({
      name: "loose",
      team: null,
      team_id: null,
      end_user_limits: { tpm: 1000, max_users: 10_000 },
    });
    // A row put without either field (as written before teams): none, and the stores all say so as null.
    const { team: _t, team_id: _i, end_user_limits: _l, guardrails: _g, ...old } = makeToken({ name: "old" });
    for (const token of [member, loose, old]) await store.put(token, makeAudit(token));
    const find = async (id: string) => (await store.loadAll()).tokens.find((t) => t.id === id)!;
    assert.equal((await find(member.id)).team, "platform");
    assert.deepEqual((await find(member.id)).end_user_limits, member.end_user_limits);
    assert.equal((await find(loose.id)).team, null);
    assert.deepEqual((await find(loose.id)).end_user_limits, { tpm: 1000, max_users: 10_000 });
    assert.deepEqual(await find(old.id), {
      ...old,
      team: null,
      team_id: null,
      end_user_limits: null,
      guardrails: null,
    });
    // Replaced and cleared.
    const moved = {
      ...member,
      team: "research",
      team_id: "tm_000000000000000000000042",
      end_user_limits: null,
      updated_at: "2026-11-24T11:00:00.000Z",
    };
    await store.put(moved, makeAudit(member), member.updated_at);
    assert.deepEqual(await find(member.id), moved);
    const joined = {
      ...old,
      team: "platform",
      team_id: "team_platform",
      updated_at: "2026-11-24T11:00:00.000Z",
    };
    await store.put(joined, makeAudit(joined), old.updated_at);
    assert.deepEqual(await find(old.id), { ...joined, end_user_limits: null, guardrails: null });
  },
);

contract(
  "a token's guardrails come back as put, in order, are replaced and cleared; absent reads as null",
  async ({ store }) => {
    const guarded = makeToken({ name: "guarded", guardrails: ["no-cards", "moderation"] });
    const single = makeToken({ name: "single", guardrails: ["moderation"] });
    // A row put without the field (as written before guardrails on issued tokens): none, as null.
    const { guardrails: _g, ...old } = makeToken({ name: "old" });
    for (const token of [guarded, single, old]) await store.put(token, makeAudit(token));
    const find = async (id: string) => (await store.loadAll()).tokens.find((t) => t.id === id)!;
    assert.deepEqual((await find(guarded.id)).guardrails, ["no-cards", "moderation"]);
    assert.deepEqual(await find(guarded.id), guarded);
    assert.deepEqual((await find(single.id)).guardrails, ["moderation"]);
    assert.deepEqual(await find(old.id), { ...old, guardrails: null });
    // Replaced (order kept) and cleared.
    const swapped = {
      ...guarded,
      guardrails: ["moderation", "no-cards"],
      updated_at: "2026-11-24T11:00:00.000Z",
    };
    await store.put(swapped, makeAudit(swapped), guarded.updated_at);
    assert.deepEqual(await find(guarded.id), swapped);
    const cleared = { ...swapped, guardrails: null, updated_at: "2026-11-24T12:00:00.000Z" };
    await store.put(cleared, makeAudit(cleared), swapped.updated_at);
    assert.deepEqual(await find(guarded.id), cleared);
    const attached = { ...old, guardrails: ["no-cards"], updated_at: "2026-11-24T11:00:00.000Z" };
    await store.put(attached, makeAudit(attached), old.updated_at);
    assert.deepEqual(await find(old.id), attached);
  },
);

contract("a put with a known id replaces the row and its secrets", async ({ store }) => {
  const first = makeToken({
    secrets: [{ sha256: "1".repeat(64), expires_at: null }, { sha256: "2".repeat(64), expires_at: null }],
  });
  await store.put(first, makeAudit(first));
  const second: StoredToken = {
    ...first,
    environment: "prod",
    limits: { rpm: 5 },
    endpoints: null,
    disabled: true,
    updated_at: "2026-11-24T11:00:00.000Z",
    rotated_at: "2026-11-24T11:00:00.000Z",
    secrets: [
      { sha256: "3".repeat(64), expires_at: null },
      { sha256: "1".repeat(64), expires_at: "2099-01-01T00:00:00.000Z" },
    ],
  };
  await store.put(second, makeAudit(second, { action: "rotate" }));
  const { tokens } = await store.loadAll();
  assert.equal(tokens.length, 1);
  assert.deepEqual(tokens[0], second);
});

contract("secrets whose grace has ended are dropped on put", async ({ store }) => {
  const token = makeToken({
    secrets: [
      { sha256: "4".repeat(64), expires_at: null },
      { sha256: "5".repeat(64), expires_at: new Date(Date.now() - 1000).toISOString() },
      { sha256: "6".repeat(64), expires_at: "2099-01-01T00:00:00.000Z" },
    ],
  });
  await store.put(token, makeAudit(token));
  const { tokens } = await store.loadAll();
  assert.deepEqual(tokens[0].secrets.map((s) => s.sha256), ["4".repeat(64), "6".repeat(64)]);
});

contract("every put bumps the version, which never goes back", async ({ store }) => {
  const start = await store.version();
  let last = start;
  for (let i = 0; i < 3; i++) {
    const token = makeToken({ name: `v${i}` });
    await store.put(token, makeAudit(token));
    const now = await store.version();
    assert.ok(now > last, `version ${now} after ${last}`);
    last = now;
  }
  assert.equal((await store.loadAll()).version, last);
  // A refused put changes nothing, the version included.
  await assert.rejects(store.put(makeToken({ name: "v0" }), makeAudit(makeToken())), TokenNameTakenError);
  assert.equal(await store.version(), last);
});

contract("a second live token with a taken name is refused; revoked, the name is free", async ({ store }) => {
  const first = makeToken({ name: "shared" });
  await store.put(first, makeAudit(first));
  const clash = makeToken({ name: "shared" });
  await assert.rejects(
    store.put(clash, makeAudit(clash)),
    (err: unknown) => err instanceof TokenNameTakenError && err.tokenName === "shared",
  );
  assert.equal((await store.loadAll()).tokens.length, 1);
  assert.equal((await store.audit({ limit: 10 })).entries.length, 1, "a refused put leaves no audit entry");
  // Replacing the same token under its own name is no clash.
  await store.put({ ...first, disabled: true }, makeAudit(first, { action: "update" }));
  const revoked = { ...first, revoked_at: "2026-11-24T12:00:00.000Z" };
  await store.put(revoked, makeAudit(first, { action: "revoke" }));
  await store.put(clash, makeAudit(clash));
  const { tokens } = await store.loadAll();
  assert.deepEqual(
    tokens.map((t) => [t.id, t.revoked_at]).sort(),
    [
      [first.id, revoked.revoked_at],
      [clash.id, null],
    ].sort(),
  );
  // Un-revoking the first (never done by the API, but the store must still hold the line) is refused.
  await assert.rejects(store.put(first, makeAudit(first, { action: "update" })), TokenNameTakenError);
});

contract("close is idempotent", async ({ store }) => {
  await store.close();
  await store.close();
});

contract(
  "a put based on an updated_at the row no longer has is refused and changes nothing",
  async ({ store }) => {
    const token = makeToken({ name: "cas" });
    await assert.rejects(
      store.put(token, makeAudit(token), token.updated_at),
      TokenChangedError,
      "no row yet",
    );
    await store.put(token, makeAudit(token), null); // null: only as a new row
    await assert.rejects(store.put(token, makeAudit(token), null), TokenChangedError, "the row exists now");
    const before = await store.loadAll();
    const stale = { ...token, disabled: true, updated_at: "2026-11-24T09:00:00.001Z" };
    await assert.rejects(
      store.put(stale, makeAudit(stale, { action: "update" }), "2026-11-24T08:59:59.999Z"),
      (err: unknown) => err instanceof TokenChangedError && err.tokenId === token.id,
    );
    assert.deepEqual(await store.loadAll(), before, "rows and version as they were");
    assert.equal((await store.audit({ limit: 10 })).entries.length, 1, "no audit entry for a refused put");
    await store.put(stale, makeAudit(stale, { action: "update" }), token.updated_at);
    assert.equal((await store.loadAll()).tokens[0].disabled, true);
  },
);

contract(
  "of 10 puts at once based on the same read, exactly one is written (on two connections where there are)",
  async ({ store, second }) => {
    const token = makeToken({ name: "raced" });
    await store.put(token, makeAudit(token));
    const stores = [store, second === undefined ? store : await second()];
    const start = await store.version();
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => {
      const next = {
        ...token,
        updated_at: new Date(Date.parse(token.updated_at) + 1 + i).toISOString(),
        secrets: [{ sha256: i.toString(16).repeat(64), expires_at: null }],
      };
      return stores[i % 2].put(next, makeAudit(next, { action: "rotate" }), token.updated_at);
    }));
    const written = results.flatMap((r, i) => r.status === "fulfilled" ? [i] : []);
    assert.equal(written.length, 1, "one compare-and-set wins");
    for (const r of results) {
      if (r.status === "rejected") assert.ok(r.reason instanceof TokenChangedError, String(r.reason));
    }
    const { tokens, version } = await store.loadAll();
    assert.deepEqual(tokens[0].secrets.map((s) => s.sha256), [written[0].toString(16).repeat(64)]);
    assert.equal(version, start + 1, "one version bump");
    assert.equal((await store.audit({ limit: 100, action: "rotate" })).entries.length, 1, "one audit entry");
  },
);

contract(
  "12 creates of one name at once: one is written, eleven are TokenNameTakenError (on two connections where there are)",
  async ({ store, second }) => {
    const stores = [store, second === undefined ? store : await second()];
    const start = await store.version();
    const twins = Array.from({ length: 12 }, () => makeToken({ name: "twelve" }));
    const results = await Promise.allSettled(twins.map((t, i) => stores[i % 2].put(t, makeAudit(t))));
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results) {
      if (r.status === "rejected") {
        assert.ok(
          r.reason instanceof TokenNameTakenError && r.reason.tokenName === "twelve",
          String(r.reason),
        );
      }
    }
    assert.equal((await store.loadAll()).tokens.length, 1);
    assert.equal(await store.version(), start + 1);
    assert.equal((await store.audit({ limit: 100 })).entries.length, 1);
  },
);

Deno.test("token store (postgres): a refused statement is no connection failure, whatever a minifier names its class", async (t) => {
  const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    const err = await sql.unsafe("SELECT 1 / 0").then(() => null, (e: unknown) => e);
    if (!(err instanceof postgres.PostgresError) && MAY_SKIP) {
      await t.step({ name: "postgres unreachable (not CI): skipped", ignore: true, fn: () => {} });
      return;
    }
    assert.ok(err instanceof Error && err.name === "PostgresError", String(err));
    assert.equal(isConnectionFailure(err), false, "a division by zero leaves the connection fine");
    // `bun build --minify` renames postgres.js's classes, and `PostgresError` takes its name from its class:
    // every refused put then reset the pool and failed the puts queued behind it (503s for a taken name).
    err.name = "Ae";
    assert.equal(isConnectionFailure(err), false, "still a statement's error under a minified name");
    assert.equal(isConnectionFailure(new Error("write CONNECTION_CLOSED")), true);
  } finally {
    await sql.end({ timeout: 5 });
  }
});
