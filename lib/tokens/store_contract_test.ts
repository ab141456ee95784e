/**
 * The token store contract, run alike against every store: memory; SQLite through the usage database's
 * worker, in a temp dir; PostgreSQL in a schema of its own, dropped after. The SQL stores run in CI always;
 * off CI (`CI` unset) they skip only when their service cannot be reached.
 */
import assert from "node:assert/strict";
import { createMemoryTokenStore } from "./store_memory.ts";
import { openSqliteWorkerStore } from "../usage/sqlite_worker_store.ts";
import { openPostgresStore } from "../usage/postgres_store.ts";
import { dropSchema, randomSchema, TEST_DATABASE_URL } from "../../tests/helpers/postgres.ts";
import postgres from "postgres";
import { isConnectionFailure } from "../usage/postgres_schema.ts";
import {
  type AuditEntry,
  type StoredToken,
  TokenChangedError,
  TokenNameTakenError,
  type TokenStore,
} from "./types.ts";

/** A store under test and how to dispose of what it made. */
interface Subject {
  store: TokenStore;
  /** A second handle on the same data (another connection), where the store has one. */
  second?: () => Promise<TokenStore>;
  dispose(): Promise<void>;
}

interface Kind {
  name: string;
  /** Null when the test should skip (never in CI). */
  open(): Promise<Subject | null>;
}

/** Whether a missing service may skip its tests: only off CI. */
const MAY_SKIP = Deno.env.get("CI") === undefined;

async function openPostgresSubject(): Promise<Subject | null> {
  const schema = randomSchema("tokens");
  const open = () => openPostgresStore({ url: TEST_DATABASE_URL, schema, timeoutMs: 5_000 });
  let db;
  try {
    db = await open();
  } catch (err) {
    if (MAY_SKIP) return null;
    throw err;
  }
  const others: { close(): Promise<void> }[] = [];
  return {
    store: db.tokens,
    second: async () => {
      const other = await open();
      others.push(other);
      return other.tokens;
    },
    dispose: async () => {
      for (const other of others) await other.close();
      await db.close();
      await dropSchema(schema);
    },
  };
}

const KINDS: Kind[] = [
  {
    name: "memory",
    open: () => {
      const store = createMemoryTokenStore();
      return Promise.resolve({ store, dispose: () => store.close() });
    },
  },
  {
    // SQLite is in the runtime: never skipped.
    name: "sqlite",
    open: async () => {
      const dir = await Deno.makeTempDir({ prefix: "token-store-" });
      const db = await openSqliteWorkerStore(`${dir}/usage.sqlite`);
      return {
        store: db.tokens,
        dispose: async () => {
          await db.close();
          await Deno.remove(dir, { recursive: true });
        },
      };
    },
  },
  { name: "postgres", open: openPostgresSubject },
];

let counter = 0;
function hexId(prefix: string): string {
  counter++;
  return `${prefix}_${counter.toString(16).padStart(24, "0")}`;
}

function makeToken(overrides: Partial<StoredToken> = {}): StoredToken {
  return {
    id: hexId("tok"),
    name: "ci-bot",
    environment: "staging",
    description: "CI pipeline",
    models: ["chat-*", "embed"],
    endpoints: ["chat", "embeddings"],
    limits: { rpm: 60, tpm: 100_000, concurrent: 4 },
    budget: { tokens: 1_000_000, period: "month" } as StoredToken["budget"],
    max_tokens: 2048,
    expires_at: "2099-01-01T00:00:00.000Z",
    disabled: false,
    created_at: "2026-11-24T09:00:00.000Z",
    updated_at: "2026-11-24T09:00:00.000Z",
    created_by: "ops-admin",
    revoked_at: null,
    rotated_at: null,
    secrets: [{ sha256: "a".repeat(64), expires_at: null }],
    ...overrides,
  };
}

function makeAudit(token: StoredToken, overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    id: hexId("aud"),
    time: new Date().toISOString(),
    actor: "ops-admin",
    action: "create",
    token_id: token.id,
    token_name: token.name,
    changes: { name: token.name, limits: { rpm: 60 } },
    ...overrides,
  };
}

/** Runs `body` against a fresh store of `kind`, skipping (outside CI only) when the service is missing. */
function contract(title: string, body: (subject: Subject) => Promise<void>): void {
  for (const kind of KINDS) {
    Deno.test(`token store (${kind.name}): ${title}`, async (t) => {
      const subject = await kind.open();
      if (subject === null) {
        await t.step({ name: `${kind.name} unreachable (not CI): skipped`, ignore: true, fn: () => {} });
        return;
      }
      try {
        await body(subject);
      } finally {
        await subject.dispose();
      }
    });
  }
}

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
  assert.deepEqual(ids(await store.audit({ limit: 5, after: "aud_" + "f".repeat(24) })), []);
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

contract("close is idempotent", async ({ store }) => {
  await store.close();
  await store.close();
});

Deno.test("token store (postgres): a put on one replica reaches another replica's watch within a second", async (t) => {
  const subject = await openPostgresSubject();
  if (subject === null) {
    await t.step({ name: "postgres unreachable (not CI): skipped", ignore: true, fn: () => {} });
    return;
  }
  try {
    const other = await subject.second!();
    let heard = 0;
    let wake = () => {};
    const stop = await other.watch!(() => {
      heard++;
      wake();
    });
    const token = makeToken({ name: "watched" });
    const started = Date.now();
    const arrived = new Promise<void>((resolve) => wake = resolve);
    await subject.store.put(token, makeAudit(token));
    await Promise.race([arrived, new Promise((r) => setTimeout(r, 1_000))]);
    assert.equal(heard, 1, `heard ${heard} notifications ${Date.now() - started} ms after the put`);
    assert.deepEqual((await other.loadAll()).tokens.map((x) => x.id), [token.id]);
    // A fleet in another schema of the same database notifies on the same channel: not heard here.
    const elsewhere = await openPostgresSubject();
    try {
      const stranger = makeToken({ name: "elsewhere" });
      await elsewhere!.store.put(stranger, makeAudit(stranger));
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(heard, 1, "a change in another schema is not this fleet's");
    } finally {
      await elsewhere!.dispose();
    }
    await stop();
    await subject.store.put({ ...token, disabled: true }, makeAudit(token, { action: "update" }));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(heard, 1, "stopped listeners hear nothing");
  } finally {
    await subject.dispose();
  }
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
